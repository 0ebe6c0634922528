import re, sys
# Marks OpStore (and optionally OpLoad) through StorageBuffer pointers Nontemporal.
src, dst, mode = sys.argv[1], sys.argv[2], sys.argv[3]  # mode: stores | loads | both
lines = open(src).read().split('\n')
sb_types = set()
for l in lines:
    m = re.match(r'\s*(%\S+) = OpTypePointer StorageBuffer ', l)
    if m: sb_types.add(m.group(1))
sb_ptrs = set()
for l in lines:
    m = re.match(r'\s*(%\S+) = Op(AccessChain|InBoundsAccessChain|PtrAccessChain) (%\S+) ', l)
    if m and m.group(3) in sb_types: sb_ptrs.add(m.group(1))
    m = re.match(r'\s*(%\S+) = OpVariable (%\S+) StorageBuffer', l)
    if m: sb_ptrs.add(m.group(1))
out, ns, nl = [], 0, 0
for l in lines:
    m = re.match(r'(\s*)OpStore (%\S+) (%\S+)(.*)$', l)
    if m and m.group(2) in sb_ptrs and mode in ('stores', 'both'):
        rest = m.group(4).strip()
        if rest == '': l = f'{m.group(1)}OpStore {m.group(2)} {m.group(3)} Nontemporal'; ns += 1
        elif rest.startswith('Aligned'): l = l.replace('Aligned', 'Aligned|Nontemporal', 1); ns += 1
    m = re.match(r'(\s*%\S+ = OpLoad %\S+ )(%\S+)(.*)$', l)
    if m and m.group(2) in sb_ptrs and mode in ('loads', 'both'):
        rest = m.group(3).strip()
        if rest == '': l = f'{m.group(1)}{m.group(2)} Nontemporal'; nl += 1
    out.append(l)
open(dst, 'w').write('\n'.join(out))
print(f'{src}: {ns} stores, {nl} loads marked', file=sys.stderr)
