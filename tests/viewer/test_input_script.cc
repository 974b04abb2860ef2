// The headless viewer's input script: each command expands to the frames of
// input it takes, and mistakes are reported with their line.
#include <catch2/catch.hpp>

#include "input_script.h"

using namespace ringscope::view;

TEST_CASE("input script commands expand to frames", "[input_script]") {
  std::vector<InputFrame> f;
  std::string error;
  REQUIRE(parse_input_script("# a comment\n\nclick 10 20  # select\nwheel -2\n", &f, &error));
  REQUIRE(f.size() == 4);
  CHECK(f[0].has_mouse);
  CHECK(f[0].mouse_x == 10);
  CHECK(f[0].mouse_y == 20);
  CHECK(f[1].button == 0);
  CHECK(f[1].button_down);
  CHECK(f[2].button == 0);
  CHECK_FALSE(f[2].button_down);
  CHECK(f[3].wheel == -2);

  f.clear();
  REQUIRE(parse_input_script("drag 0 0 100 50 2\n", &f, &error));
  REQUIRE(f.size() == 5);  // move, down, 2 moves, up
  CHECK(f[2].mouse_x == 50);
  CHECK(f[2].mouse_y == 25);
  CHECK(f[3].mouse_x == 100);
  CHECK_FALSE(f[4].button_down);

  f.clear();
  REQUIRE(parse_input_script("hold d 3\nkey Escape\nshift down\nwait 2\ndrop a.sqlite b.sqlite\n",
                             &f, &error));
  // hold: down, then up 3 frames later; key: down, up; shift; 2 waits; drop.
  REQUIRE(f.size() == 4 + 2 + 1 + 2 + 1);
  CHECK(f[0].key == 'D');  // letters as GLFW's key codes, upper case
  CHECK(f[0].key_down);
  CHECK(f[1].key == -1);
  CHECK(f[3].key == 'D');
  CHECK_FALSE(f[3].key_down);
  CHECK(f[4].key == kInputKeyEscape);
  CHECK(f[6].shift == 1);
  CHECK(f[9].dropped == std::vector<std::string>{"a.sqlite", "b.sqlite"});
}

TEST_CASE("input script mistakes name the line", "[input_script]") {
  std::vector<InputFrame> f;
  std::string error;
  CHECK_FALSE(parse_input_script("move 1 2\nmove 1\n", &f, &error));
  CHECK(error == "2: move needs X Y");
  CHECK_FALSE(parse_input_script("jump 3\n", &f, &error));
  CHECK(error == "1: unknown command 'jump'");
  CHECK_FALSE(parse_input_script("down middle\n", &f, &error));
  CHECK(error == "1: unknown mouse button 'middle'");
  CHECK_FALSE(parse_input_script("wheel 1 2\n", &f, &error));
  CHECK(error == "1: unexpected '2' after wheel");
  CHECK_FALSE(parse_input_script("drag 0 0 1 1 0\n", &f, &error));
  CHECK(error.find("drag steps") != std::string::npos);
  CHECK_FALSE(parse_input_script("drop\n", &f, &error));
  CHECK_FALSE(load_input_script("/nonexistent/script", &f, &error));
  CHECK(error == "--input: cannot read /nonexistent/script");
  CHECK_FALSE(load_input_script("/tmp", &f, &error));  // a directory
  CHECK(error == "--input: cannot read /tmp");
  CHECK_FALSE(parse_input_script("drag 0 0 1 1 4x\n", &f, &error));
  CHECK(error == "1: drag steps must be 1-1000, not '4x'");
}
