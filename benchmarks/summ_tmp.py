import json, glob, sys
for f in sorted(glob.glob(f'benchmarks/results/{sys.argv[1]}/*-k*.json')):
    d = json.load(open(f)); s = d['stages']
    print(f.split('/')[-2], d['graph'], d['k'], d['partitioner'], round(d['total_seconds'], 2), round(d.get('solve_seconds', 0), 2),
          {a: round(b, 2) for a, b in s.items() if b > 0.01}, d['boundary_vertices'],
          (d.get('exactness_check') or {}).get('exact'))
