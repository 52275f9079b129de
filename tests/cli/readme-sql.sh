#!/bin/sh
# readme-sql.sh README BLOCK... : prints the README's SQL blocks marked
# "<!-- tested: BLOCK -->", in the order given, their paths replaced: the
# segments' glob by $CROFT_GLOB and the Parquet folder by $CROFT_PARQUET.
# For test-duckdb.sh and the benches, so what runs is what the README says.
set -eu
readme=$1
shift
for block in "$@"; do
	awk -v mark="<!-- tested: $block -->" '
		$0 == mark { want = 1; next }
		want && /^```sql$/ { inside = 1; next }
		inside && /^```$/ { exit }
		inside { print }' "$readme" |
		sed -e "s|/srv/croft/\*\*/\*\.jsonl\.zst|${CROFT_GLOB:-/srv/croft/**/*.jsonl.zst}|g" \
			-e "s|/srv/croft-parquet|${CROFT_PARQUET:-/srv/croft-parquet}|g"
done
