/* SPDX-License-Identifier: Apache-2.0
 * AERON_PY_DEBUG is 0 unless the build passes -DAERON_PY_DEBUG=1, so debug checks compile away. */
#ifndef AERON_PY_DEBUG
#define AERON_PY_DEBUG 0
#endif
