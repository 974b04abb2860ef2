// Catch2 main for the autotuner tests (kept separate so it compiles once).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
