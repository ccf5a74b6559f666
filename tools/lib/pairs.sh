# Interleaved pairs for the overhead scripts (sourced, not run): A and B
# measured ROUNDS times each, which of the two runs first alternating from
# round to round so that a drift of the machine favours neither, and the
# ratio A/B taken within each round, where both ran side by side. What
# comes out is the per-round ratios, their median and their range, and
# their geometric mean with its 95 % interval and whether it covers 1: paired
# ratios, not a ratio of two medians.
#
# A script defines run_a and run_b (each prints one number, a rate) and
# calls: pairs ROUNDS "A's name" "B's name" "what A/B means" [GOAL]. A
# script that takes its ratios otherwise (several from one pair of runs)
# prints the same summary of them with: paired_summary "what" [GOAL] <FILE.
# GOAL, where a goal bounds the cost: the lowest A/B it allows (0.95 for
# "costs at most 5 % of the rate"); the goal is judged on the interval's
# low end, not on the median: met where the interval lies above it, missed
# where below, not resolved where it spans it.

# The median of numbers, one per line.
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

pairs() {
  local rounds="$1" name_a="$2" name_b="$3" meaning="$4" goal="${5:-}" a b i ratios=""
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
  paired_summary "$meaning" "$goal" <<<"$(printf '%s' "$ratios")"
}

# paired_summary "what A/B means" [GOAL] <ratios, one per line: their
# median and range, their geometric mean with its 95 % interval, and the
# goal judged on that interval.
paired_summary() {
  local meaning="$1" goal="${2:-}" ratios
  ratios="$(cat)"
  awk -v m="$(printf '%s\n' "$ratios" | median)" -v what="$meaning" -v goal="$goal" '
    NR == 1 || $1 < lo { lo = $1 } NR == 1 || $1 > hi { hi = $1 }
    { l[NR] = log($1); sum += l[NR] }
    END {
      n = NR
      printf "%s: median of %d per-round ratios %.4f (range %.4f-%.4f; a change smaller than that range is not resolved by this run)\n",
          what, n, m, lo, hi
      if (n < 2) { if (goal != "") printf "%s: goal >= %s not judged: one round has no interval\n", what, goal; exit }
      # The geometric mean of the ratios with a 95 % t interval on their
      # logs, as the tool summarises paired rounds (base/statistics.h); t
      # from a table to 30 degrees of freedom, beyond by 1.96 + 2.4/df
      # (within 0.1 % of t there).
      split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 2.060 2.056 2.052 2.048 2.045 2.042", t, " ")
      df = n - 1; q = df <= 30 ? t[df] : 1.96 + 2.4 / df
      mean = sum / n; for (i = 1; i <= n; ++i) ss += (l[i] - mean) ^ 2
      half = q * sqrt(ss / df / n)
      a = exp(mean - half); b = exp(mean + half)
      verdict = (a > 1) ? "above 1" : ((b < 1) ? "below 1" : "~ (covers 1)")
      printf "%s: geometric mean %.4f [%.4f, %.4f] (95 %% interval) %s\n", what, exp(mean), a, b, verdict
      if (goal == "") exit
      if (a >= goal) judged = "met: the interval lies above it"
      else if (b < goal) judged = "missed: the interval lies below it"
      else judged = sprintf("not resolved: the interval spans it (a cost of up to %.1f %% is not ruled out)", 100 * (1 - a))
      printf "%s: goal >= %s %s\n", what, goal, judged
    }' <<<"$ratios"
}
