#!/bin/sh
# docs-sql.sh FILE BLOCK... : prints the SQL blocks of FILE (docs/engines.md)
# marked "<!-- tested: BLOCK -->", in the order given, their paths replaced:
# the segments' glob by $CROFT_GLOB and the Parquet folder by $CROFT_PARQUET.
# For test-duckdb.sh and the benches, so what runs is what the docs say.
set -eu
doc=$1
shift
for block in "$@"; do
	awk -v mark="<!-- tested: $block -->" '
		$0 == mark { want = 1; next }
		want && /^```sql$/ { inside = 1; next }
		inside && /^```$/ { exit }
		inside { print }' "$doc" |
		sed -e "s|/srv/croft/\*\*/\*\.jsonl\.zst|${CROFT_GLOB:-/srv/croft/**/*.jsonl.zst}|g" \
			-e "s|/srv/croft-parquet|${CROFT_PARQUET:-/srv/croft-parquet}|g"
done
