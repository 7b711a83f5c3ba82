// A library the fake module links against and that is then not where the loader looks: the case
// of an installed module whose CUDA libraries are missing.
extern "C" __attribute__((visibility("default"))) int inferdesk_test_vanished_symbol() { return 1; }
