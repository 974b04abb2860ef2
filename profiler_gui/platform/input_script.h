// Scripted input for the headless viewer (`--input FILE`): the mouse, wheel,
// keys and dropped files a user would give the window, one frame at a time,
// so that tests drive the real gestures (wheel zoom at the cursor, drag to
// pan, Shift + drag to zoom to a range, click to select, W/A/S/D, F, Z, Esc,
// drag and drop) instead of calling the actions behind them.
//
// One command per line; '#' starts a comment. Coordinates are window pixels.
//   move X Y              the cursor to (X, Y)
//   down [left|right]     press a mouse button (left if omitted)
//   up [left|right]       release it
//   click X Y             move, press, release (three frames)
//   drag X0 Y0 X1 Y1 [N]  move, press, N moves to (X1, Y1) (default 4), release
//   wheel DY              scroll (positive: away from the user, zooms in)
//   key NAME              press and release (two frames); NAME: a letter or
//                         digit, Escape or F5
//   hold NAME N           keep NAME down for N frames, then release
//   shift down|up, ctrl down|up
//   drop PATH...          files dropped on the window (as from the desktop)
//   wait N                N frames with no input
// Each command becomes one or more frames (InputFrame); the viewer waits for
// a trace being loaded before it plays the next one.
#pragma once

#include <string>
#include <vector>

namespace ringscope::view {

// What changes at the start of one frame. Unset fields leave the input as it was.
struct InputFrame {
  bool has_mouse = false;
  float mouse_x = 0, mouse_y = 0;
  int button = -1;  // 0 left, 1 right: set to button_down
  bool button_down = false;
  float wheel = 0;
  int key = -1;  // ImGui 1.86 key index (GLFW key code): set to key_down
  bool key_down = false;
  int shift = -1, ctrl = -1;         // -1 unchanged, 0 up, 1 down
  std::vector<std::string> dropped;  // files dropped this frame
};

// GLFW's codes for the named keys the script knows ('A'..'Z', '0'..'9' are
// their ASCII codes).
inline constexpr int kInputKeyEscape = 256, kInputKeyF5 = 294;

// Parses a script; on error returns false with "LINE: problem" in *error.
bool parse_input_script(const std::string& text, std::vector<InputFrame>* frames,
                        std::string* error);
// Reads and parses FILE; the error names the file.
bool load_input_script(const std::string& path, std::vector<InputFrame>* frames,
                       std::string* error);

}  // namespace ringscope::view
