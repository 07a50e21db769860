/* test_space.c: schedules/space.c — workload keys and their validation
 * (keys come from databases and logs made elsewhere), knob ids, the
 * layouts a config implies, and the default configs fitted to the
 * target's registers and caches. */
#include "helpers.h"
#include "space.h"

static void test_keys_round_trip_and_refuse(void **state) {
  (void)state;
  conv_workload w = {1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, back;
  char key[256], why[128];
  workload_key(&w, key, sizeof key);
  assert_int_equal(workload_from_key(key, &back), 0);
  assert_memory_equal(&w, &back, sizeof w);
  /* stride 0 (once a SIGFPE in tune's transfer), padding of 2^40 (an
   * overflowed output size), groups not dividing, a window past the input */
  const char *bad[] = {"conv2d_n1_c64_h56_w56_k64_r3s3_st0x0_p1x1x1x1_d1x1_g1_f32_nchw",
                       "conv2d_n1_c64_h56_w56_k64_r3s3_st1x1_p1099511627776x1x1x1_d1x1_g1_f32_nchw",
                       "conv2d_n1_c64_h56_w56_k64_r3s3_st1x1_p1x1x1x1_d1x1_g3_f32_nchw",
                       "conv2d_n1_c64_h2_w2_k64_r7s7_st1x1_p0x0x0x0_d1x1_g1_f32_nchw",
                       "conv2d_n1_c64_h56_w56_k64_r3s3_st1x1_p1x1x1x1_d0x1_g1_f32_nchw",
                       "conv2d_n1_c64_h56_w56_k64_r3s3_st1x1_p1x1x1x1_d1x1_g1_f32_nhwc"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) assert_int_equal(workload_from_key(bad[i], &back), -1);
  w.pt = 5000;
  assert_int_equal(workload_valid(&w, why, sizeof why), -1);
  assert_string_equal(why, "padding must be between 0 and 4096");
}

static void test_knobs_and_layouts(void **state) {
  (void)state;
  conv_workload w = {1, 48, 14, 14, 96, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  task_space sp;
  space_build(&w, 16, &sp);
  assert_string_equal(knob_names[K_OC_BN], "oc_bn");
  for (int64_t i = 0; i < sp.size; i += 97) {
    sched_config c;
    if (space_config(&sp, i, &c) || !space_valid(&sp, &c)) continue;
    conv_layouts own, nchw;
    config_layouts(&sp, &c, -1, &own);
    config_layouts(&sp, &c, 0, &nchw);
    int64_t ib = cfg_get(&sp, &c, c.tmpl == TMPL_DEPTHWISE ? K_C_BN : K_IC_BN);
    assert_int_equal(own.in_blk, ib);   /* measured in its own blocks */
    assert_int_equal(own.out_blk, cfg_get(&sp, &c, c.tmpl == TMPL_DEPTHWISE ? K_C_BN : K_OC_BN));
    assert_int_equal(nchw.in_blk, config_reads_block(&sp, &c, 0) ? 0 : ib);
    assert_int_equal(own.tile, c.tmpl == TMPL_WINOGRAD ? cfg_get(&sp, &c, K_TILE) : 0);
    assert_int_equal(cfg_get(&sp, &c, K_M_BN) >= 0, c.tmpl == TMPL_1X1);   /* a knob of another template: -1 */
  }
}

/* the space of w for vec-float vectors, with the given cache sizes */
static void build_for(const conv_workload *w, int vec, int64_t l1d, int64_t l2, task_space *sp) {
  space_build(w, vec, sp);
  sp->l1d = l1d;
  sp->l2 = l2;
}

static int64_t accumulators(const task_space *sp, const sched_config *c) {
  int64_t ob = cfg_get(sp, c, c->tmpl == TMPL_DEPTHWISE ? K_C_BN : K_OC_BN), nv = ob < sp->vec ? 1 : (ob + sp->vec - 1) / sp->vec;
  int64_t p = c->tmpl == TMPL_1X1 ? cfg_get(sp, c, K_M_BN)
            : c->tmpl == TMPL_WINOGRAD ? cfg_get(sp, c, K_T_BN)
            : cfg_get(sp, c, K_OW_BN) * (c->tmpl == TMPL_NCHWC ? cfg_get(sp, c, K_OH_BN) : 1);
  return nv * p;
}

static void test_defaults_fit_the_machine(void **state) {
  (void)state;
  /* ResNet-50's 1×1 14×14 1024→256 with AVX-512 and 48 KiB / 1 MiB (Zen
   * 5): four vectors of output channels by 6 positions (24 accumulators:
   * 28 spill with the 4 weight vectors and the broadcast), the ic loop not
   * unrolled. With 2 MiB of L2 (Intel's server cores) the weight vectors,
   * streamed from L2 (256 KB a block), count thrice: two vectors by 14 */
  conv_workload w = {1, 1024, 14, 14, 256, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  task_space sp;
  sched_config c;
  build_for(&w, 16, 48 << 10, 1 << 20, &sp);
  config_default(&sp, &c);
  assert_int_equal(c.tmpl, TMPL_1X1);
  assert_int_equal(cfg_get(&sp, &c, K_OC_BN), 64);
  assert_int_equal(cfg_get(&sp, &c, K_M_BN), 6);
  assert_int_equal(cfg_get(&sp, &c, K_UNROLL_IC), 0);
  build_for(&w, 16, 48 << 10, 2 << 20, &sp);
  config_default(&sp, &c);
  assert_int_equal(cfg_get(&sp, &c, K_OC_BN), 32);
  assert_int_equal(cfg_get(&sp, &c, K_M_BN), 14);
  /* ... but not where one block's weights stay in L1: 64→256 at 56×56 (16 KB) */
  conv_workload stage2 = {1, 64, 56, 56, 256, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  build_for(&stage2, 16, 48 << 10, 2 << 20, &sp);
  config_default(&sp, &c);
  assert_int_equal(cfg_get(&sp, &c, K_OC_BN), 64);
  assert_int_equal(cfg_get(&sp, &c, K_M_BN), 6);
  /* MobileNetV2's projection 144→24 at 56×56: 24 channels in 16 + 8 lanes
   * (3/4 of two FMAs) rather than blocks of 8 (half of one) */
  conv_workload proj = {1, 144, 56, 56, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  build_for(&proj, 16, 48 << 10, 1 << 20, &sp);
  config_default(&sp, &c);
  assert_int_equal(c.tmpl, TMPL_1X1);
  assert_int_equal(cfg_get(&sp, &c, K_OC_BN), 24);
  assert_true(accumulators(&sp, &c) <= 28);
  /* 2048→512 at 7×7: 4 MiB of weights. With positions outer every position
   * tile would read them again past L2: output-channel blocks outer */
  conv_workload deep = {1, 2048, 7, 7, 512, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  build_for(&deep, 16, 48 << 10, 2 << 20, &sp);
  config_default(&sp, &c);
  assert_int_equal(cfg_get(&sp, &c, K_LOOP), 0);
  /* with AVX2 (16 registers, 512 KiB L2, as Zen 3) no default register tile
   * of a deep layer keeps fewer than 10 accumulators: four vectors by two
   * positions (8, at the FMA latency's limit) ran these at about half
   * the speed of two by six; with AVX-512 the tiles are those of above */
  const conv_workload deep_avx2[] = {deep, w, {1, 1024, 14, 14, 2048, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1},
                                     {1, 512, 14, 14, 512, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1}};
  for (size_t i = 0; i < sizeof deep_avx2 / sizeof *deep_avx2; i++) {
    build_for(&deep_avx2[i], 8, 32 << 10, 512 << 10, &sp);
    config_default(&sp, &c);
    assert_true(accumulators(&sp, &c) >= 10);
    /* a 1×1: two vectors of channels (one would broadcast per FMA), and
     * positions outer (channel blocks outer gather the input K / 16 times) */
    if (c.tmpl == TMPL_1X1) {
      assert_int_equal(cfg_get(&sp, &c, K_OC_BN), 16);
      assert_int_equal(cfg_get(&sp, &c, K_LOOP), 1);
    }
  }
  build_for(&deep, 16, 48 << 10, 1 << 20, &sp);
  config_default(&sp, &c);
  assert_int_equal(cfg_get(&sp, &c, K_OC_BN), 64);
  assert_int_equal(cfg_get(&sp, &c, K_M_BN), 5);
  build_for(&deep, 16, 48 << 10, 2 << 20, &sp);   /* weight vectors from L2: two vectors by 10 */
  config_default(&sp, &c);
  assert_int_equal(cfg_get(&sp, &c, K_OC_BN), 32);
  assert_int_equal(cfg_get(&sp, &c, K_M_BN), 10);
  /* a 3×3 stride-2 layer with 2.25 MiB of weights and a 784 KiB input:
   * in a 1 MiB L2 neither stays, and it splits over rows, its row tiles
   * grown (fewer passes over the weights); in a 2 MiB L2 the input stays
   * and the weights would not, so the output-channel blocks go outer and
   * the weights are read once; in a 64 MiB one both stay: rows */
  conv_workload s2 = {1, 256, 28, 28, 256, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1};
  build_for(&s2, 16, 48 << 10, 1 << 20, &sp);
  assert_true(conv_split_rows(&sp));
  config_default_direct(&sp, &c, 0);   /* the direct default (weights that are not constants) */
  assert_true(cfg_get(&sp, &c, K_OH_BN) >= 2);
  build_for(&s2, 16, 48 << 10, 64 << 20, &sp);
  assert_true(conv_split_rows(&sp));
  build_for(&s2, 16, 48 << 10, 2 << 20, &sp);
  assert_false(conv_split_rows(&sp));
  config_default(&sp, &c);
  assert_int_equal(c.tmpl, TMPL_NCHWC);
  assert_false(config_splits_rows(&sp, &c));
  assert_int_equal(cfg_get(&sp, &c, K_ORDER), 0);   /* 2.25 MiB, many tiles per block */
  int64_t rows_small_l2 = cfg_get(&sp, &c, K_OH_BN);
  assert_true(rows_small_l2 >= 2);
  /* its weight block per input-channel block fits half of L1 */
  int64_t ib = cfg_get(&sp, &c, K_IC_BN), ob = cfg_get(&sp, &c, K_OC_BN);
  assert_true(4 * 9 * ib * ob <= (48 << 10) / 2);
  build_for(&s2, 16, 48 << 10, 64 << 20, &sp);
  config_default(&sp, &c);
  assert_true(cfg_get(&sp, &c, K_OH_BN) <= rows_small_l2);
  /* a smaller L1 takes smaller input-channel blocks */
  build_for(&s2, 16, 16 << 10, 2 << 20, &sp);
  config_default(&sp, &c);
  assert_true(cfg_get(&sp, &c, K_IC_BN) < ib || cfg_get(&sp, &c, K_OC_BN) < ob);
  /* stage 5's 3×3 stride 2 (9 MiB of weights, 7×7 outputs): few tiles
   * re-read each block, which comes from memory in a network — the
   * kernel-position loops outer, unless the weights stay in L2 */
  conv_workload s5 = {1, 512, 14, 14, 512, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1};
  build_for(&s5, 16, 48 << 10, 2 << 20, &sp);
  config_default(&sp, &c);
  assert_int_equal(c.tmpl, TMPL_NCHWC);
  assert_int_equal(cfg_get(&sp, &c, K_ORDER), 1);
  build_for(&s5, 16, 48 << 10, 64 << 20, &sp);
  config_default(&sp, &c);
  assert_int_equal(cfg_get(&sp, &c, K_ORDER), 0);
  /* AVX2 (16 registers): every default fits 12 accumulators, and the space
   * refuses a tile of 28 that AVX-512 takes */
  const conv_workload all[] = {w, deep, s2, {1, 3, 224, 224, 64, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1},
                               {1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 144, 56, 56, 144, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 144}};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    for (int vec = 8; vec <= 16; vec += 8) {
      build_for(&all[i], vec, 32 << 10, 1 << 20, &sp);
      config_default(&sp, &c);
      assert_true(space_valid(&sp, &c));
      /* the broadcasting templates leave room for the weights and the
       * broadcast; Winograd's (measured best at 28 with AVX-512) and the
       * depthwise's (no broadcast) take the space's bound */
      int bcast = c.tmpl == TMPL_NCHWC || c.tmpl == TMPL_1X1;
      assert_true(accumulators(&sp, &c) <= (!bcast ? sp.regs : vec == 16 ? 27 : 12));
    }
  build_for(&w, 8, 32 << 10, 1 << 20, &sp);
  char err[256];
  assert_int_not_equal(config_parse(&sp, "conv2d_1x1:ic_bn=16,oc_bn=8,m_bn=28,unroll_ic=0,loop=0", &c, err, sizeof err), 0);
  assert_non_null(strstr(err, "more than 12 vector registers"));
  build_for(&w, 16, 32 << 10, 1 << 20, &sp);
  assert_int_equal(config_parse(&sp, "conv2d_1x1:ic_bn=16,oc_bn=16,m_bn=28,unroll_ic=0,loop=0", &c, err, sizeof err), 0);
  /* depthwise: the producer's block when it is a candidate, else one vector */
  conv_workload dw = {1, 192, 28, 28, 192, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 192};
  build_for(&dw, 16, 48 << 10, 2 << 20, &sp);
  config_default_at(&sp, 64, 1, &c);
  assert_int_equal(cfg_get(&sp, &c, K_C_BN), 64);
  config_default_at(&sp, 24, 1, &c);   /* 24 divides 192 but is not a whole number of vectors: one vector */
  assert_int_equal(cfg_get(&sp, &c, K_C_BN), 16);
  config_default_at(&sp, -1, 1, &c);
  assert_int_equal(cfg_get(&sp, &c, K_C_BN), 16);
  assert_int_equal(cfg_get(&sp, &c, K_OW_BN), 28);   /* 28 + 3 weights + 1 input: 32 registers */
  /* the columns leave registers for a kernel row's weights: 48 channels
   * (3 vectors) take 7 columns, 21 + 9 + 1 of 32, not the 8 of the
   * accumulator budget alone (56×56×144 spilled with 8) */
  conv_workload dw56 = {1, 144, 56, 56, 144, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 144};
  build_for(&dw56, 16, 48 << 10, 1 << 20, &sp);
  config_default_at(&sp, 48, 1, &c);
  assert_int_equal(cfg_get(&sp, &c, K_C_BN), 48);
  assert_int_equal(cfg_get(&sp, &c, K_OW_BN), 7);
  build_for(&dw56, 8, 48 << 10, 1 << 20, &sp);   /* AVX2, 16 registers: 12 columns + 3 + 1 */
  config_default_at(&sp, -1, 1, &c);
  assert_int_equal(cfg_get(&sp, &c, K_OW_BN), 8);
  /* Winograd where a tile block's working set passes L2: one block of all
   * the tiles with two groups where its transformed input fits L2 and the
   * weights are at least four times it (14×14: 4 MiB against 784 KiB), or
   * it fits half of L2 (28×28 on 2 MiB: 882 KiB); else output-channel
   * groups, as many as it takes for a group's weights to fit half of L2
   * (up to four), unless a group's working set still passes 3/4 of it;
   * then one group of 14-tile blocks (28×28 on 1 MiB). ResNet-50's 3×3
   * layers: 2 MiB L2 as on the Intel machines, 1 MiB as on Zen 5 */
  const struct { int64_t hw, ch, l2, groups, t_blk, stage; } wg[] = {
      {56, 64, 2 << 20, 1, 1, 1}, {28, 128, 2 << 20, 2, 4, 0}, {14, 256, 2 << 20, 2, 4, 0},
      {56, 64, 1 << 20, 1, 1, 1}, {28, 128, 1 << 20, 1, 1, 1}, {14, 256, 1 << 20, 2, 4, 0}};
  for (size_t i = 0; i < sizeof wg / sizeof *wg; i++) {
    conv_workload l = {1, wg[i].ch, wg[i].hw, wg[i].hw, wg[i].ch, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    build_for(&l, 16, 48 << 10, wg[i].l2, &sp);
    config_default(&sp, &c);
    assert_int_equal(c.tmpl, TMPL_WINOGRAD);
    assert_int_equal(cfg_get(&sp, &c, K_OC_SPLIT), wg[i].groups);
    assert_int_equal(cfg_get(&sp, &c, K_T_BLK), wg[i].t_blk);
    assert_int_equal(cfg_get(&sp, &c, K_STAGE), wg[i].stage);
    assert_true(space_valid(&sp, &c));
    if (wg[i].t_blk > 1) {   /* the block covers all 49 tiles: 4 register tiles of 14 */
      assert_int_equal(cfg_get(&sp, &c, K_T_BN), 14);
      assert_int_equal(winograd_block(&sp, &c), 49);
    }
  }
  /* an odd number of oc-blocks (GoogLeNet's 14×14 layers: 224 channels in
   * 7 blocks of 32, 208 in 13 of 16, 288 in 9): no two groups, so not one
   * block of all the tiles either (one task for every thread), but two
   * blocks, of 28 and 21 of the 49 tiles (two register tiles of 14), one
   * group; likewise for a wide layer's (7×7, 480 channels in 15 blocks of
   * 32: blocks of 8 of its 16 tiles) */
  const struct { int64_t c, hw, k, block; } odd[] = {{112, 14, 224, 28}, {96, 14, 208, 28}, {144, 14, 288, 28}, {512, 7, 480, 8}};
  for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
    conv_workload l = {1, odd[i].c, odd[i].hw, odd[i].hw, odd[i].k, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    build_for(&l, 16, 48 << 10, 1 << 20, &sp);
    config_default(&sp, &c);
    assert_int_equal(c.tmpl, TMPL_WINOGRAD);
    assert_int_equal(cfg_get(&sp, &c, K_TILE), 2);
    assert_int_equal(cfg_get(&sp, &c, K_OC_SPLIT), 1);
    assert_int_equal(winograd_block(&sp, &c), odd[i].block);
    assert_int_equal(cfg_get(&sp, &c, K_STAGE), 0);
    assert_true(space_valid(&sp, &c));
  }
  /* the tile of small layers on small images: 2 where tile 4 makes at most
   * 16 tiles and C·K is at most 64² (DenseNet's 128→32 at 14×14, GoogLeNet's
   * 16→48 and 32→128), 4 beyond (SqueezeNet's 64→256 at 13×13) and on
   * larger images (DenseNet's 128→32 at 28×28), on 1 and 2 MiB of L2;
   * with AVX-512 only */
  const struct { int64_t c, hw, k, tile; } small[] = {
      {128, 14, 32, 2}, {16, 14, 48, 2}, {32, 14, 128, 2}, {64, 13, 256, 4}, {48, 13, 192, 4}, {128, 28, 32, 4}};
  for (size_t i = 0; i < sizeof small / sizeof *small; i++)
    for (int64_t l2 = 1 << 20; l2 <= 2 << 20; l2 *= 2) {
      conv_workload l = {1, small[i].c, small[i].hw, small[i].hw, small[i].k, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
      build_for(&l, 16, 48 << 10, l2, &sp);
      config_default(&sp, &c);
      assert_int_equal(c.tmpl, TMPL_WINOGRAD);
      assert_int_equal(cfg_get(&sp, &c, K_TILE), small[i].tile);
      assert_true(space_valid(&sp, &c));
      build_for(&l, 8, 48 << 10, l2, &sp);   /* AVX2: tile 4 as before (three blocks of 6 tiles) */
      config_default(&sp, &c);
      assert_int_equal(c.tmpl, TMPL_WINOGRAD);
      assert_int_equal(cfg_get(&sp, &c, K_TILE), 4);
    }
  /* C·K up to 256²: tile 4 where it makes at least 49 tiles (VGG's 56×56
   * layers of 256, GoogLeNet's 128→192 at 28×28, 256 at 28×28), tile 2
   * below (ResNet's 14×14 layers of 256: 16 tiles), with AVX-512 and AVX2 */
  const struct { int64_t c, hw, k, tile; } big[] = {{256, 56, 256, 4}, {128, 56, 256, 4}, {128, 28, 192, 4},
                                                    {256, 28, 256, 4}, {256, 14, 256, 2}, {256, 24, 256, 2}};
  for (size_t i = 0; i < sizeof big / sizeof *big; i++)
    for (int vec = 8; vec <= 16; vec *= 2) {
      conv_workload l = {1, big[i].c, big[i].hw, big[i].hw, big[i].k, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
      build_for(&l, vec, 48 << 10, 1 << 20, &sp);
      config_default(&sp, &c);
      assert_int_equal(c.tmpl, TMPL_WINOGRAD);
      assert_int_equal(cfg_get(&sp, &c, K_TILE), big[i].tile);
      assert_true(space_valid(&sp, &c));
    }
  /* a 768 KiB L2: the 14×14 layer's transformed input does not fit, one group */
  conv_workload l14 = {1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  build_for(&l14, 16, 48 << 10, 768 << 10, &sp);
  config_default(&sp, &c);
  assert_int_equal(c.tmpl, TMPL_WINOGRAD);
  assert_int_equal(cfg_get(&sp, &c, K_OC_SPLIT), 1);
  assert_int_equal(cfg_get(&sp, &c, K_T_BLK), 1);
  /* wider than 256²: Winograd where a tile block's transformed input
   * fits L2, or twice L2 for a block of more than 16 tiles — ResNet's 7×7
   * layers of 512 channels (16 tiles of F(2×2, 3×3), 512 KiB): two
   * register tiles of 8, one block, two output-channel groups, also with a
   * 512 KiB L2 as on Zen 3 (there 0.58× the direct default's time in the
   * model), direct with 256 KiB; 14×14 (49 tiles, 1.6 MiB) with 1 and 2
   * MiB, four register tiles of 14 (13 is not a candidate), direct with
   * 512 KiB; 28×28 (196 tiles) in blocks of 56 (1.8 MiB) with 1 MiB */
  const struct { int64_t hw, l2_lo, l2_hi, t_bn, t_blk, block; } wide[] = {{7, 512 << 10, 2 << 20, 8, 2, 16},
                                                                           {14, 1 << 20, 2 << 20, 14, 4, 49}};
  for (size_t i = 0; i < sizeof wide / sizeof *wide; i++) {
    conv_workload l = {1, 512, wide[i].hw, wide[i].hw, 512, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    for (int64_t l2 = wide[i].l2_lo; l2 <= wide[i].l2_hi; l2 *= 2) {
      build_for(&l, 16, 48 << 10, l2, &sp);
      config_default(&sp, &c);
      assert_int_equal(c.tmpl, TMPL_WINOGRAD);
      assert_int_equal(cfg_get(&sp, &c, K_TILE), 2);
      assert_int_equal(cfg_get(&sp, &c, K_T_BN), wide[i].t_bn);
      assert_int_equal(cfg_get(&sp, &c, K_T_BLK), wide[i].t_blk);
      assert_int_equal(winograd_block(&sp, &c), wide[i].block);
      assert_int_equal(cfg_get(&sp, &c, K_OC_SPLIT), 2);
      assert_int_equal(cfg_get(&sp, &c, K_STAGE), 0);
    }
    build_for(&l, 16, 48 << 10, wide[i].l2_lo / 2, &sp);   /* the block past its bound: direct */
    config_default(&sp, &c);
    assert_int_equal(c.tmpl, TMPL_NCHWC);
  }
  conv_workload w7 = {1, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  conv_workload w28 = {1, 512, 28, 28, 512, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  build_for(&w28, 16, 48 << 10, 1 << 20, &sp);
  config_default(&sp, &c);
  assert_int_equal(c.tmpl, TMPL_WINOGRAD);
  assert_int_equal(cfg_get(&sp, &c, K_TILE), 2);
  assert_int_equal(winograd_block(&sp, &c), 56);
  assert_true(space_valid(&sp, &c));
  /* AVX2: register tiles of at most 6 (2 vectors × 6 of 12 accumulators);
   * the fewest register tiles the knob offers that cover all 16 tiles,
   * four of 4 (three are not a candidate) */
  for (int64_t l2 = 512 << 10; l2 <= 1 << 20; l2 *= 2) {
    build_for(&w7, 8, 32 << 10, l2, &sp);
    config_default(&sp, &c);
    assert_int_equal(c.tmpl, TMPL_WINOGRAD);
    assert_true(space_valid(&sp, &c));
    assert_true(accumulators(&sp, &c) <= sp.regs);
    assert_int_equal(cfg_get(&sp, &c, K_T_BLK), 4);
    assert_int_equal(cfg_get(&sp, &c, K_T_BN), 4);
    assert_int_equal(winograd_block(&sp, &c), 16);
  }
  /* a block whose last register tile would have no tile is refused; a
   * record from before t_blocks reads as one register tile per block */
  build_for(&w7, 16, 48 << 10, 1 << 20, &sp);
  char werr[256];
  assert_int_not_equal(config_parse(&sp, "conv2d_winograd:tile=2,ic_bn=16,oc_bn=32,t_bn=8,par=0,stage=0,unroll_c=0,oc_split=1,t_blocks=4", &c,
                                    werr, sizeof werr), 0);
  assert_int_equal(config_parse(&sp, "conv2d_winograd:tile=2,ic_bn=16,oc_bn=32,t_bn=8,par=0,stage=0,unroll_c=0,oc_split=1", &c, werr,
                                sizeof werr), 0);
  assert_int_equal(cfg_get(&sp, &c, K_T_BLK), 1);
  assert_int_equal(winograd_block(&sp, &c), 8);
}

/* Winograd at stride 2: its tile knob (2, 3, 4: alpha 5, 7, 9), and the
 * default on an AVX-512 core with a 1 MiB L2 (Zen 5, where it was
 * measured) for ResNet-50's stride-2 3×3 layers — tile 2, no channel
 * groups with 14 tile blocks, two and one block of all the tiles with 4 —
 * and direct for the 14×14×512 one (16 tiles), on a 2 MiB L2 and with
 * AVX2 */
static void test_stride2_winograd_defaults(void **state) {
  (void)state;
  task_space sp;
  sched_config c;
  conv_workload s3 = {1, 128, 56, 56, 128, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1}, s4 = {1, 256, 28, 28, 256, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},
                s5 = {1, 512, 14, 14, 512, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1};
  build_for(&s3, 16, 48 << 10, 1 << 20, &sp);
  const tmpl_space *wt = space_tmpl(&sp, TMPL_WINOGRAD);
  assert_non_null(wt);
  assert_int_equal(wt->knobs[0].id, K_TILE);
  assert_int_equal(wt->knobs[0].n, 3);
  assert_int_equal(wt->knobs[0].vals[1], 3);
  config_default(&sp, &c);
  assert_int_equal(c.tmpl, TMPL_WINOGRAD);
  assert_int_equal(cfg_get(&sp, &c, K_TILE), 2);
  assert_int_equal(cfg_get(&sp, &c, K_OC_SPLIT), 1);
  assert_true(space_valid(&sp, &c));
  build_for(&s4, 16, 48 << 10, 1 << 20, &sp);
  config_default(&sp, &c);
  assert_int_equal(c.tmpl, TMPL_WINOGRAD);
  assert_int_equal(cfg_get(&sp, &c, K_TILE), 2);
  assert_int_equal(cfg_get(&sp, &c, K_OC_SPLIT), 2);
  /* its 49 tiles in one block of four register tiles of 14 */
  assert_int_equal(cfg_get(&sp, &c, K_T_BLK), 4);
  assert_int_equal(winograd_block(&sp, &c), 49);
  assert_int_equal(cfg_get(&sp, &c, K_STAGE), 0);
  build_for(&s5, 16, 48 << 10, 1 << 20, &sp);
  config_default(&sp, &c);
  assert_int_equal(c.tmpl, TMPL_NCHWC);
  build_for(&s3, 16, 48 << 10, 2 << 20, &sp);
  config_default(&sp, &c);
  assert_int_equal(c.tmpl, TMPL_NCHWC);
  build_for(&s3, 8, 32 << 10, 512 << 10, &sp);
  config_default(&sp, &c);
  assert_int_equal(c.tmpl, TMPL_NCHWC);
  /* stride 3, or 2 one way only: no Winograd template */
  conv_workload s23 = s3;
  s23.sw = 1;
  build_for(&s23, 16, 48 << 10, 1 << 20, &sp);
  assert_null(space_tmpl(&sp, TMPL_WINOGRAD));
  s23.sh = s23.sw = 3;
  build_for(&s23, 16, 48 << 10, 1 << 20, &sp);
  assert_null(space_tmpl(&sp, TMPL_WINOGRAD));
}
static void test_host_caches(void **state) {
  (void)state;
  int64_t l1d, l2;
  space_caches(&l1d, &l2);
  assert_true(l1d >= 8 << 10 && l1d <= 1 << 20);
  assert_true(l2 >= 128 << 10 && l2 <= 1LL << 30);
}

/* The 1×1 and direct defaults take an input block that reads the
 * producer's blocks as they are, where theirs does not and one at least
 * half as long does: RegNetY's 120 channels in blocks of 24 (ic_bn 15 → 12,
 * 1×1 and 3×3); blocks of 5 would leave only 5 (kept at 15); a block the
 * default reads already (ResNet's 256 in blocks of 64) changes nothing;
 * nor does no producer block. */
static void test_default_reads_producer_block(void **state) {
  (void)state;
  conv_workload one = {1, 120, 28, 28, 120, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  conv_workload three = {1, 120, 28, 28, 120, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  conv_workload res = {1, 256, 56, 56, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  task_space sp;
  sched_config c, plain;
  space_build_for(&one, 16, 48 << 10, 1 << 20, &sp);
  config_default_at(&sp, -1, 1, &plain);
  assert_int_equal(cfg_get(&sp, &plain, K_IC_BN), 15);
  config_default_at(&sp, 24, 1, &c);
  assert_int_equal(cfg_get(&sp, &c, K_IC_BN), 12);
  assert_true(config_reads_block(&sp, &c, 24) && space_valid(&sp, &c));
  config_default_at(&sp, 5, 1, &c);
  assert_int_equal(cfg_get(&sp, &c, K_IC_BN), 15);
  space_build_for(&three, 16, 48 << 10, 1 << 20, &sp);
  config_default_at(&sp, 24, 0, &c);
  assert_int_equal(c.tmpl, TMPL_NCHWC);
  assert_true(config_reads_block(&sp, &c, 24));
  space_build_for(&res, 16, 48 << 10, 1 << 20, &sp);
  config_default_at(&sp, -1, 1, &plain);
  config_default_at(&sp, 64, 1, &c);
  assert_memory_equal(&c, &plain, sizeof c);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_keys_round_trip_and_refuse), cmocka_unit_test(test_knobs_and_layouts),
                                     cmocka_unit_test(test_defaults_fit_the_machine), cmocka_unit_test(test_host_caches),
                                     cmocka_unit_test(test_default_reads_producer_block), cmocka_unit_test(test_stride2_winograd_defaults)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
