/* tile_amx.c — the amx tile-operation entry (contract in tile_impl.h).
 *
 * Placeholder: this folder exists for its probe microkernels (probe_amx.c), and registry.c lists
 * tl_tile_amx_impl whenever CMake builds the folder. Every operation is NULL, so dispatch
 * passes to the levels below (the scalar reference handles everything). The amx tile operations
 * replace this file's NULLs with their functions.
 */
#include "../tile_impl.h"

const tl_tile_impl tl_tile_amx_impl = {
    .isa = TL_ISA_AMX,
    .name = "amx",
};
