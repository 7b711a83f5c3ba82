#!/usr/bin/env bash
# Per-kernel GPU time of a stretch of an inferdesk-cli run, measured with Nsight Compute (ncu,
# clocks not locked, one metric: gpu__time_duration), then summed by kernel name.
#
#   CLI=path/to/inferdesk-cli SKIP=30000 COUNT=400 bash tools/gpu/profile_kernels.sh out.csv \
#       bench --backend cuda --dummy llama-3.2-1b --batch 1 --input-len 128 --output-len 256
#
# SKIP launches are passed over (loading, warm-up, prefill) and COUNT are timed: choose COUNT to
# cover a whole number of decode steps. Kernels run one at a time under ncu, so programmatic
# dependent launch overlap is not visible here: the sum is an upper bound of a step's GPU time.
set -euo pipefail
OUT_CSV="$1"; shift
CLI="${CLI:-inferdesk-cli}"
SKIP="${SKIP:-30000}"
COUNT="${COUNT:-400}"
ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
    --launch-skip "$SKIP" --launch-count "$COUNT" "$CLI" "$@" > "$OUT_CSV.raw" 2> "$OUT_CSV.err" || true
python3 - "$OUT_CSV.raw" "$OUT_CSV" <<'PY'
import csv, sys, collections
rows = [l for l in open(sys.argv[1]) if l.startswith('"')]
reader = csv.DictReader(rows)
agg = collections.OrderedDict()
total = 0.0
for r in reader:
    if r.get('Metric Name') != 'gpu__time_duration.sum':
        continue
    name = r['Kernel Name'].split('(')[0][:70] + ' ' + r.get('Grid Size', '') + ' ' + r.get('Block Size', '')
    ns = float(r['Metric Value'].replace(',', ''))
    n, t = agg.get(name, (0, 0.0))
    agg[name] = (n + 1, t + ns)
    total += ns
with open(sys.argv[2], 'w') as f:
    f.write('kernel,grid,block,count,total_us,mean_us,share\n')
    for name, (n, t) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        f.write('%s,%d,%.1f,%.2f,%.1f%%\n' % (name.replace(',', ';'), n, t / 1e3, t / 1e3 / n, 100 * t / max(total, 1)))
print('kernels timed: %d, total %.1f us' % (sum(n for n, _ in agg.values()), total / 1e3))
for name, (n, t) in sorted(agg.items(), key=lambda kv: -kv[1][1])[:25]:
    print('%8.1f us %5d x %7.2f  %s' % (t / 1e3, n, t / 1e3 / n, name))
PY
