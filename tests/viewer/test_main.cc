// Catch2 main for the viewer tests (kept separate so it compiles once).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
