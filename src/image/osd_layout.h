// On-screen display layout: a frame's detected objects turned into draw commands (image/draw.h),
// so the detection flow overlays boxes and labels with one run_draw_* per batch.
//
// Per object, in this order:
//   1. fill    (style.fill_alpha > 0) a filled rectangle over the box in the class color, at
//              fill_alpha, first so the border stays opaque;
//   2. border  a kRectangle of style.thickness pixels inside the box's edges, class color;
//   3. label   (style.show_labels) kOsdLabelTextColor text on a kOsdLabelBackground box at
//              kOsdLabelBackgroundAlpha: "[#<track> ]<name>[ <score>]", e.g. "#12 person 0.87".
//              <name> is the label text, or "class <id>" when the label is empty; <score> has two
//              decimals and is left out when hidden or not finite; the track part only for
//              track_id >= 0. Text beyond kMaxDrawText characters is cut off.
// Geometry, in frame pixels (pixel i spans [i, i + 1)):
//   - the box's corners are ordered (normalized_box), clamped to [0, width] x [0, height], then
//     rounded to the nearest pixel boundary, halves up (floor(v + 0.5)); the rectangle covers
//     [x1, x2) x [y1, y2). Objects whose rounded box is empty (outside the frame, or thinner than a
//     pixel) or whose corners are not finite get no commands.
//   - the label box (label_size) sits on the box: its bottom edge on the box's top edge, left edges
//     aligned; where that leaves no room above (top edge < label height) it goes inside the box,
//     top edges aligned. It is then shifted left/up as needed to lie inside the frame (to the
//     top-left corner when it is larger than the frame).
// Colors: kOsdPalette, Kenneth Kelly's 22 colors of maximum contrast (1965) without white and
// black, in Kelly's order (each color as different as possible from those before it); class c takes
// kOsdPalette[c mod 20] (negative ids wrap the same way, so every id has a color).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/box.h"
#include "core/status.h"
#include "image/draw.h"

namespace fovea::image {

struct OsdObject {
  Box box;  // frame pixels
  int class_id = 0;
  float score = 0.0f;
  int track_id = -1;       // -1: not tracked
  std::string_view label;  // class name; empty: "class <id>" is shown
};

struct OsdStyle {
  int thickness = 2;        // border, in pixels: 1..kMaxDrawCoordinate
  float fill_alpha = 0.0f;  // 0..1; 0: no fill
  bool show_labels = true;
  bool show_scores = true;
  int text_scale = 1;  // 1..kMaxTextScale: each font pixel becomes text_scale x text_scale
  int image = 0;       // the frame's index in the batch the commands are drawn on
};

using OsdColor = std::array<std::uint8_t, 3>;  // R, G, B

inline constexpr int kOsdPaletteSize = 20;
// Kelly's colors as sRGB, from Green-Armytage's "A Colour Alphabet" (2010) table of Kelly's list.
inline constexpr std::array<OsdColor, kOsdPaletteSize> kOsdPalette{{
    {0xF3, 0xC3, 0x00},  // vivid yellow
    {0x87, 0x56, 0x92},  // strong purple
    {0xF3, 0x84, 0x00},  // vivid orange
    {0xA1, 0xCA, 0xF1},  // very light blue
    {0xBE, 0x00, 0x32},  // vivid red
    {0xC2, 0xB2, 0x80},  // grayish yellow
    {0x84, 0x84, 0x82},  // medium gray
    {0x00, 0x88, 0x56},  // vivid green
    {0xE6, 0x8F, 0xAC},  // strong purplish pink
    {0x00, 0x67, 0xA5},  // strong blue
    {0xF9, 0x93, 0x79},  // strong yellowish pink
    {0x60, 0x4E, 0x97},  // strong violet
    {0xF6, 0xA6, 0x00},  // vivid orange yellow
    {0xB3, 0x44, 0x6C},  // strong purplish red
    {0xDC, 0xD3, 0x00},  // vivid greenish yellow
    {0x88, 0x2D, 0x17},  // strong reddish brown
    {0x8D, 0xB6, 0x00},  // vivid yellowish green
    {0x65, 0x45, 0x22},  // deep yellowish brown
    {0xE2, 0x58, 0x22},  // vivid reddish orange
    {0x2B, 0x3D, 0x26},  // dark olive green
}};

// White text on a mostly opaque black box reads on any class color and any scene.
inline constexpr OsdColor kOsdLabelTextColor{255, 255, 255};
inline constexpr OsdColor kOsdLabelBackground{0, 0, 0};
inline constexpr float kOsdLabelBackgroundAlpha = 0.6f;

struct LabelSize {
  int width = 0;
  int height = 0;
};

OsdColor osd_class_color(int class_id);
// The label's text as drawn (already cut to kMaxDrawText characters).
std::string osd_label_text(const OsdObject& object, const OsdStyle& style);
// The pixels a kText command with `text` (cut to kMaxDrawText characters) covers at `scale`: the
// text plus `scale` pixels of padding on every side.
LabelSize label_size(std::string_view text, int scale);

// Appends the commands of `objects` on a frame of frame_width x frame_height pixels to `commands`
// (nothing for no objects). Errors: a style outside the ranges above or a frame without pixels;
// `commands` is unchanged then.
Status append_osd_commands(std::span<const OsdObject> objects, const OsdStyle& style, int frame_width,
                           int frame_height, std::vector<DrawCommand>& commands);

}  // namespace fovea::image
