// A configuration becomes a running flow: its stages (stages_of: the preset's or the file's) are
// expanded into ops on stage threads, its sinks chosen, and the FlowPlan run by the generic runner
// (flow_runner.h). Nothing here or below knows which command asked for it.
//
//   segment  preprocess [frame rgb, preprocess] -> inference [model, class map] ->
//            postprocess [mask] -> composite [composite]
//   detect   preprocess [gate, preprocess] -> inference [model, detect]
//   track    track [tracker] (host)
//   classify one stage per secondary model [crops through the fused preprocess, model, top-k]
//   osd      display [osd, mosaic or frame download]
//   classify_frames  preprocess [preprocess] -> inference [model, classify frames]
//   image2image      preprocess [preprocess] -> inference [model, picture]
//   segment on images  preprocess [preprocess] -> inference [model, class map, label map]
//
// It runs on the GPU when this build has CUDA and a GPU is present, on the CPU otherwise, and says
// which.
#pragma once

#include "pipeline/config.h"
#include "pipeline/flow_runner.h"

namespace fovea::pipeline {

// Runs the flow to the end of its sources (or an interrupt). The frames take the configuration's mux
// size, or the sources' own size when it leaves that out (with_frame_size). Before anything runs,
// every output is checked (core/output_file.h): one that is an input (a source, a model, a label
// file) or cannot be created is kInvalidArgument, as is a model that does not fit its stage.
Result<FlowResult> run_flow(const PipelineConfig& config, const FlowOptions& options = {});

}  // namespace fovea::pipeline
