# Interleaved pairs for the overhead scripts (sourced, not run): A and B
# measured ROUNDS times each, which of the two runs first alternating from
# round to round so that a drift of the machine favours neither, and the
# ratio A/B taken within each round, where both ran side by side. What
# comes out is the per-round ratios, their median and their range: a median
# of paired ratios, not a ratio of two medians.
#
# A script defines run_a and run_b (each prints one number, a rate) and
# calls: pairs ROUNDS "A's name" "B's name" "what A/B means".

# The median of numbers, one per line.
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

pairs() {
  local rounds="$1" name_a="$2" name_b="$3" meaning="$4" a b i ratios=""
  for i in $(seq "$rounds"); do
    if ((i % 2)); then
      a="$(run_a)"; b="$(run_b)"
    else
      b="$(run_b)"; a="$(run_a)"
    fi
    [[ -n "$a" && -n "$b" ]] || { echo "round $i: a run gave no figure" >&2; return 1; }
    awk -v a="$a" -v b="$b" -v i="$i" -v na="$name_a" -v nb="$name_b" -v first="$(((i % 2)) && echo "$name_a" || echo "$name_b")" \
      'BEGIN { printf "round %d (%s first): %s %s, %s %s, ratio %.4f\n", i, first, na, a, nb, b, a / b }'
    ratios+="$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')"$'\n'
  done
  awk -v n="$rounds" -v m="$(printf '%s' "$ratios" | median)" -v what="$meaning" '
    NR == 1 || $1 < lo { lo = $1 } NR == 1 || $1 > hi { hi = $1 }
    END { printf "%s: median of %d per-round ratios %.4f (range %.4f-%.4f; a change smaller than that range is not resolved by this run)\n",
          what, n, m, lo, hi }' <<<"$(printf '%s' "$ratios")"
}
