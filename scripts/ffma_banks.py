"""Count FFMAs whose three source registers all come from the register file and fall in the same
bank, in a cuobjdump -sass listing (a reading aid, not a measurement).

The model, from microbenchmark papers on Volta and later: two register banks (register number
mod 2), and an operand that the previous instruction marked .reuse comes from the operand reuse
cache instead of the register file. An FFMA that needs three register-file reads from one bank
cannot read them in one cycle.
    usage: python3 scripts/ffma_banks.py KERNEL.sass
"""

import re
import sys

FFMA = re.compile(r"FFMA\s+R\d+,\s*-?R(\d+)(\.reuse)?,\s*-?R(\d+)(\.reuse)?,\s*-?R(\d+)(\.reuse)?")
INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]+\*/")  # "/*0a40*/  FFMA ..."; encoding-only lines have no address


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


if __name__ == "__main__":
    total, three, same = count(open(sys.argv[1]))
    print(f"FFMA {total}: {three} read three registers from the register file, {same} of them all in one bank")
