#!/usr/bin/env bash
# Draws GEMM throughput against matrix size from kiln-bench's JSON lines:
# kiln_sgemm_f32 and kiln_hgemm_f16 on each backend of the runs given,
# beside cuBLAS (SGEMM, and GemmEx with f16 inputs and f32 sums), on a log
# scale of TFLOP/s:
#
#   KILN_BACKEND=cuda   kiln-bench --json --only=gemm,hgemm > cuda.jsonl
#   KILN_BACKEND=vulkan kiln-bench --json --only=gemm,hgemm > vulkan.jsonl
#   scripts/gemm-plot.sh gemm.png cuda.jsonl vulkan.jsonl
#
# Needs gnuplot (Debian: gnuplot-nox) and python3.
set -euo pipefail

if (( $# < 2 )); then
  echo "usage: scripts/gemm-plot.sh OUT.png RUN.jsonl [RUN.jsonl ...]" >&2
  exit 2
fi
if ! command -v gnuplot >/dev/null; then
  echo "gemm-plot.sh: gnuplot not found (Debian: apt-get install gnuplot-nox)" >&2
  exit 1
fi
out=$1
shift
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT

# One data file per line ("n TFLOP/s" rows) and series.tsv naming them.
python3 - "$data" "$@" <<'EOF'
import json
import sys

folder, runs = sys.argv[1], sys.argv[2:]
series = {}
devices = []
for run in runs:
    with open(run) as f:
        for line in f:
            line = line.strip()
            if not line.startswith('{'):
                continue
            r = json.loads(line)
            if r.get('section') == 'info' and r.get('device') not in devices:
                devices.append(r.get('device'))
            if r.get('section') not in ('gemm', 'hgemm') or \
                    r.get('name') not in ('sgemm', 'hgemm') or \
                    r.get('impl') not in ('kiln', 'cublas'):
                continue
            kind = 'SGEMM f32' if r['name'] == 'sgemm' else 'HGEMM f16 in, f32 sums'
            who = ('kiln on %s' % r['backend']) if r['impl'] == 'kiln' else 'cuBLAS'
            points = series.setdefault('%s, %s' % (who, kind), {})
            # cuBLAS runs beside each backend: keep its best figure.
            n = int(r['size'])
            points[n] = max(points.get(n, 0.0), float(r['value']) / 1e3)
if not series:
    sys.exit('gemm-plot.sh: no gemm or hgemm results in %s' % ', '.join(runs))
order = sorted(series, key=lambda t: (t.startswith('cuBLAS'), t))
with open(folder + '/series.tsv', 'w') as index:
    for i, title in enumerate(order):
        name = '%s/series%d.dat' % (folder, i)
        with open(name, 'w') as f:
            for n in sorted(series[title]):
                f.write('%d %.6g\n' % (n, series[title][n]))
        index.write('%s\t%s\n' % (name, title))
with open(folder + '/title.txt', 'w') as f:
    f.write(' / '.join(d for d in devices if d) or 'kiln-bench')
EOF

plot=()
while IFS=$'\t' read -r file title; do
  case $title in
    cuBLAS*) style="lw 1.5 pt 6 dt 2" ;;
    *) style="lw 2 pt 7" ;;
  esac
  plot+=("'$file' using 1:2 with linespoints $style title '$title'")
done < "$data/series.tsv"
joined=$(IFS=,; echo "${plot[*]}")
device=$(tr -d "'" < "$data/title.txt")

gnuplot <<EOF
set terminal pngcairo size 1100,650 font ',11'
set output '$out'
set title "kiln-bench: GEMM throughput against size (square n x n x n) — $device"
set xlabel 'n'
set ylabel 'TFLOP/s'
set logscale x 2
set logscale y 10
set key outside right top
set grid
plot $joined
EOF
