#pragma once

// Remote workers over CAF's network layer (caf::io): a pool published
// behind a gatekeeper that checks a shared token, and nodes on other
// machines whose workers run the pool's attempts. Operators reach the same
// gatekeeper with `(pool_ctl, token, ...)`. Link `pool::remote`.
//
// CAF's network protocol (BASP) is a transport for trusted networks: read
// docs/remote.md ("Trust model") before publishing beyond loopback.

#include "pool/gatekeeper.hpp"
#include "pool/remote_node.hpp"
#include "pool/remote_options.hpp"
#include "pool/remote_types.hpp"
