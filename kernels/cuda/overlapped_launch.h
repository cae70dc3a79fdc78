// Whether the kernels of a step overlap their launches (programmatic
// dependent launch, compute capability 9.0): each kernel of kernels/cuda may
// be scheduled while the one before it on the stream is still running, and
// waits (griddepcontrol.wait, its first statement) until that one has
// finished and its writes are visible before it reads or writes anything.
// The same work in the same order, so the same bits; what it saves is the
// gap between one small kernel's end and the next one's start, which in a
// one-sequence decode step (~270 kernels of a few microseconds) is a large
// part of the step. On by default; process-wide (the CUDA backend sets it
// from the setting gpu_overlap_launches). Ignored before Hopper.
#pragma once

namespace kvscope::cuda {

void set_overlapped_launches(bool on);
bool overlapped_launches();

}  // namespace kvscope::cuda
