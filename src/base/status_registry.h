// The host keeps a record of every NxStatus it creates until it is released. A status pointer a
// plugin hands back is dereferenced only when the record has it: a garbage or already released
// pointer from a buggy EP becomes a clear error instead of a crash, and nothing is freed twice.
// Statuses are made only on errors, so the lock costs nothing on the paths that run.
#pragma once

#include <string>

#include "nxrt/nxrt_types.h"

struct NxStatus;

namespace nxrt {

// A new recorded status; null when out of memory.
NxStatus* NewStatus(NxStatusCode code, std::string message) noexcept;
// Releases a recorded status; anything else (null, garbage, released twice) is ignored.
void FreeStatus(NxStatus* status) noexcept;
// Whether `status` is one the host created and has not released.
bool IsHostStatus(const NxStatus* status) noexcept;
// Takes a status returned across the ABI: on true, `code` (a code outside NxStatusCode becomes
// NX_FAIL and the message says which) and `message` are filled and the status is released; on
// false the pointer was not the host's and is left alone.
bool TakeStatus(NxStatus* status, NxStatusCode& code, std::string& message);

}  // namespace nxrt
