/*
 * test/ffi/crc32c.test.ts only: reads which processor state components are in use, so the test can
 * check without any timing that a CRC leaves no dirty upper vector state behind (the state that made
 * JavaScriptCore's code several times slower after ISA-L's AVX-512 CRC; docs/benchmarks.md).
 *
 * XGETBV with ECX=1 returns XINUSE (Intel SDM vol. 1, 13.6): bit 2 = upper halves of YMM0-15,
 * bit 6 = upper 256 bits of ZMM0-15. Only on CPUs whose /proc/cpuinfo lists xgetbv1. TinyCC's
 * assembler has no mnemonics for these, hence the bytes (0f 01 d0 = XGETBV, c5 f8 77 = VZEROUPPER).
 */
unsigned int booblik_xinuse(void) {
  unsigned int low, high;
  __asm__ volatile(".byte 0x0f,0x01,0xd0" : "=a"(low), "=d"(high) : "c"(1));
  return low;
}

/* Clears the upper state again, so that a test that dirtied it does not slow the ones after it. */
int booblik_vzeroupper(void) {
  __asm__ volatile(".byte 0xc5,0xf8,0x77");
  return 0;
}
