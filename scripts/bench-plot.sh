#!/usr/bin/env bash
# Draws kiln-bench's streaming bandwidth against array size, one line per
# backend (and the raw-driver launch of the same kernel), with the device's
# copy ceiling (cuMemcpyDtoD), from the JSON lines of one or more runs:
#
#   KILN_BACKEND=cuda   kiln-bench --json > cuda.jsonl
#   KILN_BACKEND=vulkan kiln-bench --json > vulkan.jsonl
#   scripts/bench-plot.sh bandwidth.png cuda.jsonl vulkan.jsonl
#
# usage: scripts/bench-plot.sh [-k KERNEL] OUT.png RUN.jsonl [RUN.jsonl ...]
#   -k KERNEL   copy, mul, add, triad (default) or dot
# Needs gnuplot (Debian: gnuplot-nox) and python3 (which kiln's build needs
# anyway) to read the JSON.
set -euo pipefail

usage() {
  echo "usage: scripts/bench-plot.sh [-k KERNEL] OUT.png RUN.jsonl [RUN.jsonl ...]"
  echo "  -k KERNEL   copy, mul, add, triad (default) or dot"
}

kernel=triad
while getopts 'k:h' opt; do
  case $opt in
    k) kernel=$OPTARG ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if (( $# < 2 )); then
  usage >&2
  exit 2
fi
case $kernel in
  copy|mul|add|triad|dot) ;;
  *) echo "bench-plot.sh: -k takes copy, mul, add, triad or dot, not '$kernel'" >&2
     exit 2 ;;
esac
if ! command -v gnuplot >/dev/null; then
  echo "bench-plot.sh: gnuplot not found (Debian: apt-get install gnuplot-nox)" >&2
  exit 1
fi

out=$1
shift
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT

# One data file per line of the plot ("bytes GB/s" rows, by size), and
# series.tsv listing them as FILE<TAB>TITLE; title.txt names the device.
python3 - "$kernel" "$data" "$@" <<'EOF'
import json
import sys

kernel, folder, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
series = {}   # title -> {bytes: GB/s}
devices = []
for run in runs:
    with open(run) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line.startswith('{'):
                continue
            try:
                r = json.loads(line)
            except ValueError:
                sys.exit('bench-plot.sh: %s:%d is not JSON' % (run, number))
            if r.get('section') == 'info' and r.get('device') not in devices:
                devices.append(r.get('device'))
            if r.get('section') != 'stream':
                continue
            size = int(r['size']) * 4
            if r['name'] == 'ceiling':
                title = 'copy ceiling (cuMemcpyDtoD)'
            elif r['name'] != kernel:
                continue
            elif r['impl'] == 'kiln':
                title = 'kiln on %s' % r['backend']
            else:
                title = '%s, raw CUDA driver launch' % kernel
            # Several runs may measure the same ceiling: keep the best.
            points = series.setdefault(title, {})
            points[size] = max(points.get(size, 0.0), float(r['value']))
if not series:
    sys.exit('bench-plot.sh: no stream results for %s in %s'
             % (kernel, ', '.join(runs)))
# kiln's lines first, then the comparators.
order = sorted(series, key=lambda t: (not t.startswith('kiln'), t))
with open(folder + '/series.tsv', 'w') as index:
    for i, title in enumerate(order):
        name = '%s/series%d.dat' % (folder, i)
        with open(name, 'w') as f:
            for size in sorted(series[title]):
                f.write('%d %.6g\n' % (size, series[title][size]))
        index.write('%s\t%s\n' % (name, title))
with open(folder + '/title.txt', 'w') as f:
    f.write(' / '.join(d for d in devices if d) or 'kiln-bench')
EOF

# kiln's lines solid, the raw launches dashed, the ceiling dotted black;
# colours come from gnuplot's cycle so that backends differ.
plot=()
while IFS=$'\t' read -r file title; do
  case $title in
    kiln*) style="lw 2 pt 7" ;;
    *ceiling*) style="lw 2 pt 0 dt 3 lc rgb 'black'" ;;
    *) style="lw 1.5 pt 6 dt 2" ;;
  esac
  plot+=("'$file' using 1:2 with linespoints $style title '$title'")
done < "$data/series.tsv"
joined=$(IFS=,; echo "${plot[*]}")
device=$(tr -d "'" < "$data/title.txt")

gnuplot <<EOF
set terminal pngcairo size 1100,650 font ',11'
set output '$out'
set title "kiln-bench: $kernel bandwidth against array size — $device"
set xlabel 'array size (bytes per array)'
set ylabel 'GB/s (bytes read + written)'
set logscale x 2
set format x '%.0b %BB'
set xtics 4
set grid
set key left top
plot $joined
EOF
echo "bench-plot.sh: wrote $out"
