/* tile_avx2.c — the avx2 tile-operation entry (contract in tile_impl.h).
 *
 * Placeholder: this folder exists for its probe microkernels (probe_avx2.c), and registry.c lists
 * tl_tile_avx2_impl whenever CMake builds the folder. Every operation is NULL, so dispatch
 * passes to the levels below (the scalar reference handles everything). The avx2 tile operations
 * replace this file's NULLs with their functions.
 */
#include "../tile_impl.h"

const tl_tile_impl tl_tile_avx2_impl = {
    .isa = TL_ISA_AVX2,
    .name = "avx2",
};
