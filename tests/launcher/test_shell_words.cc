// Tests of the shell-style word splitter (--mpi-args) and of shell quoting
// (the printed mpirun command), including a round trip through /bin/sh.
#include <catch2/catch.hpp>

#include "launcher_test_util.h"
#include "shell_words.h"

using ringscope::shell_join;
using ringscope::shell_quote;
using ringscope::split_shell_words;
using Words = std::vector<std::string>;

namespace {

Words split(const std::string& text) {
  Words words;
  ringscope::Status s = split_shell_words(text, &words);
  INFO(s.to_string());
  REQUIRE(s.ok());
  return words;
}

}  // namespace

TEST_CASE("split: blanks separate words", "[shell_words]") {
  CHECK(split("") == Words{});
  CHECK(split("   \t\n ") == Words{});
  CHECK(split("--mca btl tcp,self") == Words{"--mca", "btl", "tcp,self"});
  CHECK(split("  -x  FOO=1\t-x\nBAR ") == Words{"-x", "FOO=1", "-x", "BAR"});
}

TEST_CASE("split: quotes group words and are removed", "[shell_words]") {
  CHECK(split("-x 'A=two words'") == Words{"-x", "A=two words"});
  CHECK(split("-x \"A=two words\"") == Words{"-x", "A=two words"});
  CHECK(split("pre'mid dle'post") == Words{"premid dlepost"});
  CHECK(split("'' \"\"") == Words{"", ""});
  CHECK(split("'say \"hi\"'") == Words{"say \"hi\""});
  CHECK(split("\"it's\"") == Words{"it's"});
}

TEST_CASE("split: backslashes escape like a shell", "[shell_words]") {
  CHECK(split("a\\ b") == Words{"a b"});
  CHECK(split("\\'x") == Words{"'x"});
  CHECK(split("\"a\\\"b\\\\c\\$d\\n\"") == Words{"a\"b\\c$d\\n"});
  CHECK(split("'a\\b'") == Words{"a\\b"});
  CHECK(split("one\\\ntwo") == Words{"onetwo"});
}

TEST_CASE("split: nothing is expanded", "[shell_words]") {
  CHECK(split("$HOME $(rm -rf /) `id` *.txt ~ a;b a|b") ==
        Words{"$HOME", "$(rm", "-rf", "/)", "`id`", "*.txt", "~", "a;b", "a|b"});
}

TEST_CASE("split: unterminated quotes and trailing backslash are errors", "[shell_words]") {
  Words words{"unchanged"};
  for (const char* bad : {"'open", "a \"open", "trailing\\"}) {
    ringscope::Status s = split_shell_words(bad, &words);
    CHECK_FALSE(s.ok());
    CHECK(s.code() == ringscope::StatusCode::kInvalidArgument);
    CHECK(s.message().find(bad) != std::string::npos);
  }
  CHECK(words == Words{"unchanged"});
}

TEST_CASE("quote: safe words stay bare and others are single-quoted", "[shell_words]") {
  CHECK(shell_quote("mpirun") == "mpirun");
  CHECK(shell_quote("RINGSCOPE_CYCLE_TIME=2.5") == "RINGSCOPE_CYCLE_TIME=2.5");
  CHECK(shell_quote("/a/b-c_d.e:1,2@x%") == "/a/b-c_d.e:1,2@x%");
  CHECK(shell_quote("") == "''");
  CHECK(shell_quote("two words") == "'two words'");
  CHECK(shell_quote("it's") == "'it'\\''s'");
  CHECK(shell_quote("$(touch x); rm") == "'$(touch x); rm'");
  CHECK(shell_quote("a\"b") == "'a\"b'");
  CHECK(shell_quote("*") == "'*'");
  CHECK(shell_quote("~") == "'~'");
  CHECK(shell_join({"echo", "a b", "c"}) == "echo 'a b' c");
}

TEST_CASE("quote then split gives the words back", "[shell_words]") {
  Words words = {"plain",       "two words", "it's",      "\"dq\"",    "$(id)", "`id`",  "a;b&c|d",
                 "back\\slash", "",          "new\nline", "tab\there", "*?[x]", "~user", "!bang"};
  CHECK(split(shell_join(words)) == words);
}

TEST_CASE("quoted words survive a real shell unchanged", "[shell_words]") {
  Words words = {"two words", "it's", "$(echo injected)", "`echo injected`", "a;echo b",
                 "$HOME",     "*",    "back\\slash"};
  // printf prints each argument on its own line, so what the shell passed is visible.
  std::string script = "printf '%s\\n' " + shell_join(words);
  ringscope::test::ProgramResult r = ringscope::test::run_program({"/bin/sh", "-c", script});
  REQUIRE(r.exit_code == 0);
  std::string expected;
  for (const std::string& w : words) expected += w + "\n";
  CHECK(r.out == expected);
}
