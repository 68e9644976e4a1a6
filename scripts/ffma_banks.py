"""Count FFMAs whose three source registers all come from the register file and fall in the same
bank, in a cuobjdump -sass listing (a reading aid, not a measurement); the same for each loop
(a backward branch) of 100 FFMAs or more, with its other instructions and where its global
loads sit among its FFMAs.

The model, from microbenchmark papers on Volta and later: two register banks (register number
mod 2), and an operand that the previous instruction marked .reuse comes from the operand reuse
cache instead of the register file. An FFMA that needs three register-file reads from one bank
cannot read them in one cycle.
A global load that the compiler sinks to the end of a k-loop has only the last products left to
hide its latency behind (dbuf lost 6 % that way, results/tuning/dbuf-order).
    usage: python3 scripts/ffma_banks.py KERNEL.sass
"""

import re
import sys

FFMA = re.compile(r"FFMA\s+R\d+,\s*-?R(\d+)(\.reuse)?,\s*-?R(\d+)(\.reuse)?,\s*-?R(\d+)(\.reuse)?")
INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]+)\*/")  # "/*0a40*/  FFMA ..."; encoding-only lines have no address
OPCODE = re.compile(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+)")  # after the address and any predicate
BACKWARD = re.compile(r"\bBRA\s+(?:`\()?(0x[0-9a-f]+)")


def count(lines):
    total = three = same = 0
    previous = None  # the previous FFMA's (register, reuse flag) per operand slot
    for line in filter(INSTRUCTION.match, lines):
        m = FFMA.search(line)
        if not m:
            previous = None
            continue
        total += 1
        slots = [(int(m.group(i)), bool(m.group(i + 1))) for i in (1, 3, 5)]
        banks = [reg % 2 for s, (reg, _) in enumerate(slots)
                 if not (previous and previous[s][0] == reg and previous[s][1])]
        if len(banks) == 3:
            three += 1
            same += len(set(banks)) == 1
        previous = slots
    return total, three, same


def loops(lines, least=100):
    """(start address, instructions, FFMAs, three reads, same bank, FFMAs before the first LDG,
    FFMAs before the last) of each innermost loop body with at least `least` FFMAs."""
    body = [line for line in lines if INSTRUCTION.match(line)]
    address = [int(INSTRUCTION.match(line).group(1), 16) for line in body]
    spans = []
    for end, line in enumerate(body):
        branch = BACKWARD.search(line)
        target = int(branch.group(1), 16) if branch else None
        if target is not None and target < address[end] and target in address:
            spans.append((address.index(target), end))
    out = []
    for start, end in spans:
        if any(start <= a and b <= end and (a, b) != (start, end) for a, b in spans):
            continue  # an outer loop: its inner loops are reported
        loop = body[start:end + 1]
        total, three, same = count(loop)
        if total < least:
            continue
        ffmas, loads = 0, []
        for ins in loop:
            op = OPCODE.search(ins).group(1)
            ffmas += op == "FFMA"
            if op == "LDG":
                loads.append(ffmas)
        out.append((address[start], len(loop), total, three, same, loads[0] if loads else None,
                    loads[-1] if loads else None))
    return out


if __name__ == "__main__":
    lines = open(sys.argv[1]).readlines()
    total, three, same = count(lines)
    print(f"FFMA {total}: {three} read three registers from the register file, {same} of them all in one bank")
    for start, n, total, three, same, first, last in loops(lines):
        where = f"global loads after FFMA {first} to {last}" if first is not None else "no global loads"
        print(f"loop at {start:#x}: {n} instructions, {total} FFMA ({same} with three reads in one bank), "
              f"{n - total} others; {where}")
