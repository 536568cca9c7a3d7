// fovea model calibrate: the calibration cache an int8 run needs (runtime/quant/calibrator.h),
// registered under `fovea model` (cmd_model.cpp).
#pragma once

#include <CLI/CLI.hpp>

#include "commands.h"

namespace fovea::app {

// Adds `calibrate` to the `model` command.
void add_calibrate_command(CLI::App* model, Action* action);

}  // namespace fovea::app
