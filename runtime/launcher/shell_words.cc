// Implementation of the shell-style word splitter and quoting used by
// `ringscope run` for --mpi-args and for printing the mpirun command.
#include "shell_words.h"

namespace ringscope {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n'; }

// Characters that never need quoting in any POSIX shell.
bool is_shell_safe(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '_':
    case '-':
    case '.':
    case '/':
    case ':':
    case ',':
    case '+':
    case '=':
    case '@':
    case '%':
      return true;
    default:
      return false;
  }
}

Status split_error(std::string_view text, const std::string& what) {
  return Status(StatusCode::kInvalidArgument,
                "cannot split '" + std::string(text) + "' into words: " + what);
}

}  // namespace

Status split_shell_words(std::string_view text, std::vector<std::string>* words) {
  std::vector<std::string> result;
  std::string current;
  bool in_word = false;  // true once a word has started, even an empty '' one
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (is_blank(c)) {
      if (in_word) result.push_back(current);
      current.clear();
      in_word = false;
      ++i;
    } else if (c == '\'') {
      size_t close = text.find('\'', i + 1);
      if (close == std::string_view::npos) return split_error(text, "unterminated single quote");
      current.append(text.substr(i + 1, close - i - 1));
      in_word = true;
      i = close + 1;
    } else if (c == '"') {
      in_word = true;
      ++i;
      bool closed = false;
      while (i < text.size()) {
        char d = text[i];
        if (d == '"') {
          closed = true;
          ++i;
          break;
        }
        if (d == '\\' && i + 1 < text.size()) {
          char next = text[i + 1];
          if (next == '"' || next == '\\' || next == '$' || next == '`') {
            current.push_back(next);
            i += 2;
            continue;
          }
          if (next == '\n') {  // line continuation
            i += 2;
            continue;
          }
        }
        current.push_back(d);
        ++i;
      }
      if (!closed) return split_error(text, "unterminated double quote");
    } else if (c == '\\') {
      if (i + 1 >= text.size()) return split_error(text, "trailing backslash");
      if (text[i + 1] != '\n') {
        current.push_back(text[i + 1]);
        in_word = true;
      }
      i += 2;
    } else {
      current.push_back(c);
      in_word = true;
      ++i;
    }
  }
  if (in_word) result.push_back(current);
  *words = std::move(result);
  return Status::OK();
}

std::string shell_quote(std::string_view word) {
  if (word.empty()) return "''";
  bool safe = true;
  for (char c : word) safe = safe && is_shell_safe(c);
  if (safe) return std::string(word);
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'')
      quoted += "'\\''";
    else
      quoted.push_back(c);
  }
  quoted.push_back('\'');
  return quoted;
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string joined;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) joined.push_back(' ');
    joined += shell_quote(words[i]);
  }
  return joined;
}

}  // namespace ringscope
