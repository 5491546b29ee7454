/* Anchor so libnxrt has a source of its own; the code comes from nxrt_runtime. */
int nxrt_library_anchor(void) { return 0; }
