// ringscope: the command dispatcher. `ringscope <sub> args...` executes
// `ringscope-<sub>` found next to this executable or else on PATH (execv, no
// shell); `ringscope --help` lists the subcommands that are installed.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "process_runner.h"

namespace {

struct Subcommand {
  const char* name;
  const char* summary;
};

constexpr Subcommand kSubcommands[] = {
    {"run", "launch a training command on N ranks through Open MPI"},
    {"trace", "merge, check, summarize, export, query and blame traces"},
    {"view", "desktop viewer for traces"},
    {"tune", "learn settings from recorded runs"},
};

std::string own_directory() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

// ringscope-<name> next to this executable, else on PATH.
std::optional<std::string> locate(const std::string& name) {
  const std::string program = "ringscope-" + name;
  std::string dir = own_directory();
  if (!dir.empty())
    if (auto found = ringscope::find_executable(dir + "/" + program, "")) return found;
  const char* path = std::getenv("PATH");
  return ringscope::find_executable(program, path ? path : "");
}

bool is_valid_name(const std::string& name) {
  if (name.empty() || name.front() == '-') return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return false;
  return true;
}

std::string available_list() {
  std::string list;
  for (const Subcommand& sub : kSubcommands) {
    if (!locate(sub.name)) continue;
    if (!list.empty()) list += ", ";
    list += sub.name;
  }
  return list.empty() ? "none found" : list;
}

void print_help(std::ostream& out) {
  out << "ringscope: ring-allreduce runtime tools\n"
      << "Usage: ringscope <command> [args...]   (ringscope <command> --help for its flags)\n\n"
      << "Commands:\n";
  for (const Subcommand& sub : kSubcommands) {
    if (!locate(sub.name)) continue;
    std::string name = sub.name;
    out << "  " << name << std::string(8 - name.size(), ' ') << sub.summary << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_help(std::cerr);
    return 2;
  }
  std::string sub = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (sub == "--help" || sub == "-h" || sub == "help") {
    if (sub == "help" && !args.empty()) {  // `ringscope help run` = `ringscope run --help`
      sub = args.front();
      args = {"--help"};
    } else {
      print_help(std::cout);
      return 0;
    }
  }
  if (!is_valid_name(sub)) {
    std::cerr << "ringscope: '" << sub << "' is not a command (available: " << available_list()
              << "; see ringscope --help)\n";
    return 2;
  }
  std::optional<std::string> program = locate(sub);
  if (!program) {
    std::cerr << "ringscope: unknown command '" << sub << "': no ringscope-" << sub
              << " next to ringscope or on PATH (available: " << available_list() << ")\n";
    return 2;
  }
  std::vector<char*> sub_argv;
  sub_argv.push_back(program->data());
  for (std::string& arg : args) sub_argv.push_back(arg.data());
  sub_argv.push_back(nullptr);
  execv(program->c_str(), sub_argv.data());
  std::cerr << "ringscope: cannot run " << *program << ": " << std::strerror(errno) << "\n";
  return 127;
}
