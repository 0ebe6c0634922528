# Probe: add OpDecorate %r FPRoundingMode RTE to every OpFConvert whose result type is the bf16 OpTypeFloat.
import struct, sys
for path in sys.argv[1:]:
    d = open(path, 'rb').read(); w = list(struct.unpack('<%dI' % (len(d) // 4), d))
    head, i, insts = w[:5], 5, []
    while i < len(w):
        n = w[i] >> 16; insts.append(w[i:i + n]); i += n
    bf = {ins[1] for ins in insts if ins[0] & 0xffff == 22 and len(ins) == 4 and ins[2] == 16 and ins[3] == 0}
    res = [ins[2] for ins in insts if ins[0] & 0xffff == 115 and ins[1] in bf]
    last_dec = max(k for k, ins in enumerate(insts) if ins[0] & 0xffff in (71, 72, 332, 5632)) if any(ins[0] & 0xffff == 71 for ins in insts) else None
    new = [[(4 << 16) | 71, r, 39, 0] for r in res]
    insts[last_dec + 1:last_dec + 1] = new
    out = head + [x for ins in insts for x in ins]
    open(path, 'wb').write(struct.pack('<%dI' % len(out), *out))
    print(path, len(bf), len(res))
