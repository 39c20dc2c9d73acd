# tour-check.sh -- every command of the README's "A short tour" runs as written (from a
# folder laid out like the repository: configs/, data/mnist): quick commands in full,
# training, sweeps and selections with --dry-run, the audit on a few hundred points, the run-using
# commands on a short run made first at the path the tour uses. So the tour cannot drift
# from the command line (label mnist: it reads MNIST).
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"
SRC=${DPGD_SOURCE_DIR:?DPGD_SOURCE_DIR is set by ctest}
W=$TMP/w
mkdir -p "$W/data" && ln -s "$SRC/configs" "$W/configs" && ln -s "$MNIST" "$W/data/mnist"
cd "$W" || exit 1
unset DPGD_DATA_DIR

# The tour's commands: indented lines starting with "dpgd ", comments cut off.
mapfile -t cmds < <(sed -n '/^## A short tour/,/^## /p' "$SRC/README.md" |
  sed -n 's/^    \(dpgd .*\)$/\1/p' | sed 's/[[:space:]]*#.*$//')
checks=$((checks + 1))
[ "${#cmds[@]}" -ge 10 ] || fail "found only ${#cmds[@]} commands in the README's tour"

# A short finished run where the tour's run-using commands look for one.
run_dir=$(printf '%s\n' "${cmds[@]}" | sed -n 's/^dpgd train --resume \([^ ]*\).*/\1/p' | head -1)
[ -n "$run_dir" ] && expect_ok "prepare $run_dir" "$DPGD" train \
  --config configs/softmax.ini --set data.n_train=300 --set train.steps=2 --quiet --out "$run_dir"

for c in "${cmds[@]}"; do
  eval "argv=(${c#dpgd })" # as a shell would split it, globs included
  case "${argv[0]} ${argv[*]}" in
    "train "*--resume*) ;; # below
    "train "* | "sweep "*) argv+=(--dry-run) ;;
    "select "*) argv+=(--dry-run --set data.n_train=1000 --set data.validation=100) ;;
    "audit "*) argv+=(--set data.n_train=300 --set train.steps=4 --canaries 30 --quiet) ;;
  esac
  checks=$((checks + 1))
  "$DPGD" "${argv[@]}" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  case "${argv[0]} ${argv[*]}" in
    "train "*--resume*)
      # The prepared run is finished: the command parses and says so.
      [ $rc -eq 0 ] || grep -q "holds a finished run; nothing to resume" "$TMP/err" ||
        fail "tour: '$c': exit $rc: $(head -c 300 "$TMP/err")" ;;
    *) [ $rc -eq 0 ] || fail "tour: '$c': exit $rc: $(head -c 300 "$TMP/err")" ;;
  esac
done
echo "${#cmds[@]} tour commands"
# The README stays an entrance.
checks=$((checks + 1))
n=$(wc -l <"$SRC/README.md")
[ "$n" -le 250 ] || fail "README.md has $n lines (at most 250: move detail to docs/)"
finish
