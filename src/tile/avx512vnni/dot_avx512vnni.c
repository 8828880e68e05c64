/* dot_avx512vnni.c — tl_tile_dot for 8-bit integers on AVX512-VNNI without AVX512-BF16 (the
 * avx512vnni level: Cascade Lake, Ice Lake): the avx512bf16 level's source built again with
 * TL_BF_VNNI_ONLY, so its int8 paths (VPDPBUSD: u8 x s8, s8 x u8, s8 x s8) are the same code, and
 * bf16 is declined (the avx512 level converts it to f32). Contract and invariants: the opening
 * comment of ../avx512bf16/dot_avx512bf16.c and docs/kernels.md. */
#define TL_BF_VNNI_ONLY 1
#define TL_BF_DOT_ENTRY tl_avx512vnni_dot
#include "../avx512bf16/dot_avx512bf16.c"
