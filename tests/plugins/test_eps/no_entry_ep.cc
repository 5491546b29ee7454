// A shared library that is not an nxrt EP: it lacks the entry points.
extern "C" __attribute__((visibility("default"))) int NotAnEp() { return 42; }
