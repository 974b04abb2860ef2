// The headless viewer's input script (see input_script.h): each command
// expanded into the frames of input it takes.
#include "input_script.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "config_dir.h"

namespace ringscope::view {
namespace {

bool parse_button(const std::string& word, int* button) {
  if (word.empty() || word == "left") return *button = 0, true;
  if (word == "right") return *button = 1, true;
  return false;
}

bool parse_key(const std::string& name, int* key) {
  if (name.size() == 1 && std::isalnum(static_cast<unsigned char>(name[0]))) {
    *key = std::toupper(static_cast<unsigned char>(name[0]));
    return true;
  }
  if (name == "Escape") return *key = kInputKeyEscape, true;
  if (name == "F5") return *key = kInputKeyF5, true;
  return false;
}

InputFrame mouse_at(float x, float y) {
  InputFrame f;
  f.has_mouse = true, f.mouse_x = x, f.mouse_y = y;
  return f;
}

InputFrame button(int b, bool down) {
  InputFrame f;
  f.button = b, f.button_down = down;
  return f;
}

InputFrame key(int k, bool down) {
  InputFrame f;
  f.key = k, f.key_down = down;
  return f;
}

// One command; false with *problem set if it is not one the script knows.
bool parse_command(std::istringstream& in, const std::string& cmd, std::vector<InputFrame>* out,
                   std::string* problem) {
  auto fail = [&](const std::string& what) {
    *problem = what;
    return false;
  };
  std::string rest;
  if (cmd == "move") {
    float x, y;
    if (!(in >> x >> y)) return fail("move needs X Y");
    out->push_back(mouse_at(x, y));
  } else if (cmd == "down" || cmd == "up") {
    std::string word;
    in >> word;
    int b;
    if (!parse_button(word, &b)) return fail("unknown mouse button '" + word + "'");
    out->push_back(button(b, cmd == "down"));
  } else if (cmd == "click") {
    float x, y;
    if (!(in >> x >> y)) return fail("click needs X Y");
    out->push_back(mouse_at(x, y));
    out->push_back(button(0, true));
    out->push_back(button(0, false));
  } else if (cmd == "drag") {
    float x0, y0, x1, y1;
    if (!(in >> x0 >> y0 >> x1 >> y1)) return fail("drag needs X0 Y0 X1 Y1 [STEPS]");
    int steps = 4;
    if (std::string word; in >> word) {
      char* end = nullptr;
      const long n = std::strtol(word.c_str(), &end, 10);
      if (*end != 0 || n < 1 || n > 1000)
        return fail("drag steps must be 1-1000, not '" + word + "'");
      steps = static_cast<int>(n);
    }
    out->push_back(mouse_at(x0, y0));
    out->push_back(button(0, true));
    for (int i = 1; i <= steps; ++i)
      out->push_back(mouse_at(x0 + (x1 - x0) * static_cast<float>(i) / static_cast<float>(steps),
                              y0 + (y1 - y0) * static_cast<float>(i) / static_cast<float>(steps)));
    out->push_back(button(0, false));
  } else if (cmd == "wheel") {
    InputFrame f;
    if (!(in >> f.wheel)) return fail("wheel needs DY");
    out->push_back(f);
  } else if (cmd == "key" || cmd == "hold") {
    std::string name;
    int k, frames = 1;
    if (!(in >> name) || !parse_key(name, &k)) return fail("unknown key '" + name + "'");
    if (cmd == "hold" && (!(in >> frames) || frames < 1 || frames > 10000))
      return fail("hold needs NAME FRAMES (1-10000)");
    out->push_back(key(k, true));
    for (int i = 1; i < frames; ++i) out->push_back(InputFrame());
    out->push_back(key(k, false));
  } else if (cmd == "shift" || cmd == "ctrl") {
    std::string state;
    in >> state;
    if (state != "down" && state != "up") return fail(cmd + " needs down or up");
    InputFrame f;
    (cmd == "shift" ? f.shift : f.ctrl) = state == "down" ? 1 : 0;
    out->push_back(f);
  } else if (cmd == "drop") {
    InputFrame f;
    for (std::string path; in >> path;) f.dropped.push_back(path);
    if (f.dropped.empty()) return fail("drop needs at least one path");
    out->push_back(f);
  } else if (cmd == "wait") {
    int frames;
    if (!(in >> frames) || frames < 0 || frames > 100000) return fail("wait needs N (0-100000)");
    out->insert(out->end(), static_cast<size_t>(frames), InputFrame());
  } else {
    return fail("unknown command '" + cmd + "'");
  }
  if (in >> rest) return fail("unexpected '" + rest + "' after " + cmd);
  return true;
}

}  // namespace

bool parse_input_script(const std::string& text, std::vector<InputFrame>* frames,
                        std::string* error) {
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream in(line);
    std::string cmd, problem;
    if (!(in >> cmd)) continue;
    if (!parse_command(in, cmd, frames, &problem)) {
      *error = std::to_string(number) + ": " + problem;
      return false;
    }
  }
  return true;
}

bool load_input_script(const std::string& path, std::vector<InputFrame>* frames,
                       std::string* error) {
  std::error_code ec;
  std::string text;
  if (!std::filesystem::is_regular_file(path, ec) || !read_whole_file(path, &text).ok()) {
    *error = "--input: cannot read " + path;
    return false;
  }
  if (parse_input_script(text, frames, error)) return true;
  *error = "--input " + path + " line " + *error;
  return false;
}

}  // namespace ringscope::view
