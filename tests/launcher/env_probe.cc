// launcher_env_probe: the tiny "training command" of the end-to-end launcher
// tests. For each argument prints one line tagged with its MPI rank:
// "env:NAME" prints NAME's value, "exit=N" exits with N, "sleep=S" sleeps S
// seconds, anything else is echoed verbatim (to check quoting).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  std::string tag = std::string("probe rank=") + (rank ? rank : "none");
  std::printf("%s size=%s\n", tag.c_str(), size ? size : "none");
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("env:", 0) == 0) {
      std::string name = arg.substr(4);
      const char* value = std::getenv(name.c_str());
      std::printf("%s %s=%s\n", tag.c_str(), name.c_str(), value ? value : "<unset>");
    } else if (arg.rfind("exit=", 0) == 0) {
      std::fflush(stdout);
      return std::atoi(arg.c_str() + 5);
    } else if (arg.rfind("sleep=", 0) == 0) {
      std::fflush(stdout);
      sleep(static_cast<unsigned>(std::atoi(arg.c_str() + 6)));
    } else {
      std::printf("%s arg=%s\n", tag.c_str(), arg.c_str());
    }
  }
  return 0;
}
