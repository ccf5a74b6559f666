# Bash completion for backendlab: commands, then each command's flags, read
# from the tool's own --help at the moment of completing (the flag tables
# the tool parses with), so nothing here can fall behind them.
# Installed into share/bash-completion/completions/backendlab; or
#   source tools/backendlab-completion.bash
_backendlab() {
  local program="${COMP_WORDS[0]}" cur="${COMP_WORDS[COMP_CWORD]}" words
  if [ "$COMP_CWORD" -eq 1 ]; then
    words="$("$program" --help 2>/dev/null | awk '/^  [a-z]/ { print $1 }') --help --version"
    mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
    return
  fi
  case "$cur" in
    --*=*) return ;;  # a value: the flag's own business
  esac
  words="$("$program" "${COMP_WORDS[1]}" --help 2>/dev/null | sed -n 's/^  \(--[a-z0-9-]*\).*/\1=/p')"
  mapfile -t COMPREPLY < <(compgen -W "$words --help" -- "$cur")
  # A flag is completed with its '=': the value follows without a space.
  [ "${#COMPREPLY[@]}" -eq 1 ] && [[ "${COMPREPLY[0]}" == *= ]] && compopt -o nospace 2>/dev/null
  return 0
}
complete -F _backendlab backendlab
