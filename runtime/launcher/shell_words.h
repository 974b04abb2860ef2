// Shell-style words without a shell: split a string into words the way a POSIX
// shell would (quotes and backslashes honoured, nothing expanded), and quote
// words so that a printed command can be pasted back into a shell unchanged.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ringscope/status.h"

namespace ringscope {

// Splits `text` into words: blanks (space, tab, newline) separate words;
// '...' keeps everything literally; "..." keeps everything except that a
// backslash escapes " \ $ ` and newline; outside quotes a backslash keeps the
// next character. No variable, command or glob expansion ever happens: "$HOME"
// stays "$HOME". An unterminated quote or a trailing backslash is an error.
Status split_shell_words(std::string_view text, std::vector<std::string>* words);

// `word` as one shell argument: unchanged when it only holds characters no
// shell treats specially in an argument (letters, digits and _-./:,+=@%),
// otherwise in single quotes (a ' inside becomes '\''). Meant for arguments,
// not for the command word itself (there `a=b` would be an assignment).
std::string shell_quote(std::string_view word);

// The words quoted and joined by single spaces.
std::string shell_join(const std::vector<std::string>& words);

}  // namespace ringscope
