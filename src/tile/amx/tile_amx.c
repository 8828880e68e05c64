/* tile_amx.c — the amx entry of the tile-operation table (contract in tile_impl.h).
 *
 * The operations live in their own files of this folder (dot_amx.c); an
 * operation is listed below once its file exists. A NULL operation passes the call to the level
 * below (the scalar reference handles everything).
 */
#include "../tile_impl.h"

int tl_amx_dot(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags);

const tl_tile_impl tl_tile_amx_impl = {
    .isa = TL_ISA_AMX,
    .name = "amx",
    .dot = tl_amx_dot,
};
