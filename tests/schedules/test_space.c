/* test_space.c: schedules/space.c — workload keys and their validation
 * (keys come from databases and logs made elsewhere), knob ids, and the
 * layouts a config implies. */
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

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_keys_round_trip_and_refuse), cmocka_unit_test(test_knobs_and_layouts)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
