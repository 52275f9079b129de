#!/bin/bash
# test-alerts.sh: share/croft/croft-alerts.yml, the alerting rules croft
# ships, through promtool: check rules, then test rules with
# croft-alerts.test.yml (each alert firing on series that should fire it,
# silent on series that should not), and docs/prometheus.md's PromQL for idle
# GPU-hours per namespace being the query that test evaluates.  Any user.
# TAP on stdout.
# usage: test-alerts.sh SOURCE_ROOT PROMTOOL
set -u
. "$(dirname "$0")/../lib/testlib.sh"
src=$1 promtool=$2
command -v "$promtool" >/dev/null 2>&1 || skip "needs promtool (Debian package prometheus)"
rules=$src/share/croft/croft-alerts.yml
n=0 fails=0

tap() { # NAME COMMAND...: one TAP line, the command's output as comments on failure
	local name=$1 out
	shift
	n=$((n + 1))
	if out=$("$@" 2>&1); then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name"
		printf '%s\n' "$out" | sed 's/^/# /'
		fails=$((fails + 1))
	fi
}

tap "promtool check rules: croft-alerts.yml" "$promtool" check rules "$rules"
# rule_files in the test file is relative to it
tap "promtool test rules: each alert fires where it should and only there" \
	bash -c 'cd "$1" && "$2" test rules croft-alerts.test.yml' _ "$src/tests/ops" "$promtool"
# docs/prometheus.md's query, and the one the test file evaluates, blanks aside
readme_query() {
	awk '/<!-- tested: tests\/ops\/test-alerts.sh/ { marked = 1; next }
		marked && /^```promql/ { inside = 1; next }
		inside && /^```/ { exit }
		inside { print }' "$src/docs/prometheus.md" | tr -d ' \n'
}
test_query() {
	awk '/promql_expr_test:/ { found = 1 }
		found && /expr: \|/ { inside = 1; next }
		inside && /exp_samples:/ { exit }
		inside { print }' "$src/tests/ops/croft-alerts.test.yml" | tr -d ' \n'
}
same_query() {
	local want got
	want=$(test_query) got=$(readme_query)
	[ -n "$want" ] && [ "$want" = "$got" ] || { echo "test file: $want"; echo "docs/prometheus.md: $got"; return 1; }
}
tap "docs/prometheus.md's PromQL for idle GPU-hours per namespace is the one tested" same_query
echo "1..$n"
[ "$fails" = 0 ]
