#!/bin/sh
# Checks the manual pages against the programs they describe, so that a new
# subcommand or option cannot ship undocumented in man(1):
#   man_page_check.sh CLI CLI_PAGE [APP APP_PAGE]
# - groff renders each page with every warning on and prints nothing;
# - each page's header carries the program's version;
# - CLI_PAGE has a `.B NAME` entry for every subcommand `CLI --help` lists;
# - APP_PAGE names every long option `APP --help` lists.
set -eu
cli=$1 cli_page=$2
app=${3:-} app_page=${4:-}
status=0
fail() { echo "FAIL: $*"; status=1; }
# A name as the pages write it, as a grep pattern: a typed dash is \- in
# roff (a plain - may print as a hyphen that does not paste into a shell).
roff_pattern() { printf '%s' "$1" | sed 's/-/\\\\-/g'; }

for page in "$cli_page" ${app_page:+"$app_page"}; do
  warnings=$(groff -man -ww -z "$page" 2>&1) || fail "groff failed on $page"
  [ -z "$warnings" ] || fail "groff warns on $page: $warnings"
done

version=$("$cli" --version | awk '{print $2}')
grep -q "^\.TH .*\"kvscope $version\"" "$cli_page" || fail "$cli_page does not say version $version"

subcommands=$("$cli" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && NF {print $1}')
[ -n "$subcommands" ] || fail "$cli --help listed no subcommands"
for name in $subcommands; do
  grep -qx "\.B $(roff_pattern "$name")" "$cli_page" || fail "$cli_page has no entry for the subcommand $name"
done
echo "checked $(echo "$subcommands" | wc -w) subcommands"

if [ -n "$app" ]; then
  grep -q "^\.TH .*\"kvscope $version\"" "$app_page" || fail "$app_page does not say version $version"
  options=$(QT_QPA_PLATFORM=offscreen "$app" --help 2>/dev/null | grep -o -- '--[a-z][a-z-]*' | sort -u \
            | grep -v -x -e --help -e --help-all -e --version)
  [ -n "$options" ] || fail "$app --help listed no options"
  for option in $options; do
    grep -q -- "$(roff_pattern "$option")" "$app_page" || fail "$app_page does not mention $option"
  done
  echo "checked $(echo "$options" | wc -w) app options"
fi
exit $status
