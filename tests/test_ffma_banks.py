"""scripts/ffma_banks.py on hand-written SASS lines: reuse-cached operands do not count."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).parent.parent / "scripts" / "ffma_banks.py"
spec = importlib.util.spec_from_file_location("ffma_banks", SCRIPT)
ffma_banks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ffma_banks)

SASS = """\
        /*0100*/                   FFMA R4, R8, R10, R4 ;              /* 0x0000000a08047223 */
                                                                       /* 0x000fe20000000004 */
        /*0110*/                   FFMA R5, R8.reuse, R11, R5 ;        /* 0x0000000b08057223 */
        /*0120*/                   FFMA R6, R8, R12, R6 ;              /* 0x0000000c08067223 */
        /*0130*/                   FFMA R7, R9, R13, R7 ;              /* 0x0000000d09077223 */
        /*0140*/                   LDS.128 R8, [R2] ;                  /* 0x0000000002087984 */
        /*0150*/                   FFMA R3, R9, R11, R5 ;              /* 0x0000000b09037223 */
"""


def test_counts_three_register_reads_in_one_bank():
    # 0100: R8 R10 R4, all even: a conflict. 0110: three reads (R8 was not marked before), mixed banks.
    # 0120: R8 comes from the reuse cache (0110 marked it): two reads. 0130: R9 R13 R7, all odd: a
    # conflict. 0150: after a non-FFMA nothing is cached: R9 R11 R5, all odd.
    assert ffma_banks.count(SASS.splitlines()) == (5, 4, 3)


LOOPS = """\
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   LDS.128 R8, [R2] ;
        /*0020*/                   FFMA R4, R8, R10, R4 ;
        /*0030*/                   LDG.E.128 R12, desc[UR4][R20.64] ;
        /*0040*/                   FFMA R5, R9, R11, R5 ;
        /*0050*/                   FFMA R6, R8, R11, R6 ;
        /*0060*/                   LDG.E R16, desc[UR4][R22.64] ;
        /*0070*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0080*/              @!P0 BRA 0x10 ;
        /*0090*/                   FFMA R7, R9, R13, R7 ;
        /*00a0*/               @P1 BRA 0x0 ;
        /*00b0*/                   BRA 0xb0 ;
"""


def test_loops_report_the_innermost_loop_and_where_its_loads_sit():
    # 0x10-0x80 is the inner loop: three FFMAs (0x20: R8 R10 R4 all even; 0x40: R9 R11 R5 all odd;
    # 0x50: R8 R11 R6 mixed), loads after the first and after the third FFMA. 0x0-0xa0 holds it (an
    # outer loop, not reported); 0xb0 branches to itself (no body); the threshold keeps loops of 3 FFMAs.
    assert ffma_banks.loops(LOOPS.splitlines(), least=3) == [(0x10, 8, 3, 3, 2, 1, 3)]
    assert ffma_banks.loops(LOOPS.splitlines(), least=4) == []
