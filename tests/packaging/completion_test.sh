#!/usr/bin/env bash
# Issue 16: the bash completion (packaging/bash-completion/oarbank-agent) completes the
# sub-commands, a sub-command's options and sandbox-ctl's actions, from the binary's --help.
# Usage: completion_test.sh AGENT COMPLETION_FILE
set -euo pipefail
agent=$1
# shellcheck source=/dev/null
source "$2"
fail=0
complete_words() {  # WORDS...: completes the last word, prints COMPREPLY sorted on one line
  COMP_WORDS=("$agent" "${@:1}")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  _oarbank_agent
  printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
}
expect() {  # EXPECTED WORDS...
  local want=$1 got
  shift
  got=$(complete_words "$@")
  if [[ $got != "$want" ]]; then
    echo "completion of '$*': got '$got', expected '$want'" >&2
    fail=1
  fi
}
expect "sandbox-check sandbox-ctl sandbox-exec sandbox-report sandbox-run sandbox-stock" "sandbox-"
expect "sandbox-report sandbox-run" "sandbox-r"
expect "egress-proxy" "eg"
expect "--version" "--vers"
expect "--timeout" "sandbox-run" "--time"
expect "--explain" "sandbox-exec" "--exp"
expect "list" "sandbox-ctl" "li"
expect "sandbox-run" "help" "sandbox-ru"
exit $fail
