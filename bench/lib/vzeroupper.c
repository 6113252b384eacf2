/*
 * bench/record.bench.ts only: runs VZEROUPPER (bytes c5 f8 77; TinyCC's assembler has no AVX
 * mnemonics). ISA-L's crc32_iscsi takes an AVX-512 path for buffers of a few hundred bytes and up
 * and returns without clearing the upper vector state; until something executes VZEROUPPER, the
 * SSE code that follows (Bun's JIT, glibc's copies) runs about 5x slower on this CPU.
 */
int booblik_vzeroupper(void) {
  __asm__(".byte 0xc5,0xf8,0x77");
  return 0;
}
