/* test_isa.h — the ISA levels a test runs its cases at: every level of tl_isa up to this CPU's
 * highest (AMX included where the CPU has it), each through a context capped with opts.isa. */
#ifndef TILEC_TEST_ISA_H
#define TILEC_TEST_ISA_H

#include <tilec.h>

/* The name of ISA level i (tl_isa order) when this CPU has it, else NULL:
 *   for (int i = 0; (g_isa = test_isa_level(i)) != NULL; i++) { ... opts.isa = g_isa ... } */
static inline const char *test_isa_level(int i) {
  tl_cpu_info cpu;
  tl_cpu_detect(&cpu);
  return i >= 0 && i < TL_ISA_COUNT && i <= (int)cpu.isa_max ? tl_isa_name((tl_isa)i) : NULL;
}

#endif /* TILEC_TEST_ISA_H */
