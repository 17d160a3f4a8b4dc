// What decoding an agent's object may cost core (issue 32: crafted JSON such as `[{},{},…]` grew
// ~25× in the heap — a 60 MiB snapshot took core 117 → 1,702 MB). Before JSON.parse, one pass
// over the bytes counts what the parsed value will hold, and an object whose estimated heap is far
// beyond what Kubernetes objects cost is refused, as is one larger than any Kubernetes object.
//
// The estimate, from V8's measured costs (JSON.parse of 2M-element arrays, Node 24): every
// container (`{` or `[`) ~64 bytes (an empty object 67, an empty array 43, `[0]` 68), every
// separator (`,` or `:`, one per element or property) ~8 bytes (an array slot; `[0,0,…]` 5×), and
// the text itself. Kubernetes objects as the agent sends them come to ~3× their bytes (a Pod:
// one container per 47 bytes, one separator per 12) and really take ~1.5×.

/** An agent object's JSON past these bounds is refused (the stream ends with RESOURCE_EXHAUSTED). */
export interface DecodeLimits {
  /** Bytes of one object's JSON (Kubernetes objects are below ~1.5 MiB, etcd's request limit). */
  maxObjectBytes: number;
  /** Estimated heap of one decoded object, as a multiple of its bytes (plus a few hundred bytes). */
  maxAmplification: number;
}

export const DEFAULT_DECODE_LIMITS: DecodeLimits = Object.freeze({
  maxObjectBytes: 3 << 20,
  maxAmplification: 8,
});

/** Slack for tiny objects (`{"metadata":{"name":"a"}}` is 2 containers in 25 bytes). */
const SLACK = 256;
const PER_CONTAINER = 64;
const PER_SEPARATOR = 8;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const COMMA = 0x2c;
const COLON = 0x3a;

/**
 * The heap JSON.parse of `json` will take, estimated from its containers and separators outside
 * strings. UTF-8 continuation bytes are ≥ 0x80, so scanning bytes never misreads a character.
 */
export function estimatedHeapBytes(json: Uint8Array): number {
  let containers = 0;
  let separators = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const b = json[i];
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) inString = true;
    else if (b === OPEN_BRACE || b === OPEN_BRACKET) containers++;
    else if (b === COMMA || b === COLON) separators++;
  }
  return json.length + containers * PER_CONTAINER + separators * PER_SEPARATOR;
}

/** Why `json` may not be decoded under `limits`, or undefined; with its estimated heap. */
export function checkDecodeCost(
  json: Uint8Array,
  limits: DecodeLimits,
): { estimate: number; refused?: string } {
  if (json.length > limits.maxObjectBytes)
    return {
      estimate: json.length,
      refused: `object of ${json.length} bytes exceeds ${limits.maxObjectBytes} bytes (larger than any Kubernetes object)`,
    };
  const estimate = estimatedHeapBytes(json);
  const allowed = json.length * limits.maxAmplification + SLACK;
  if (estimate > allowed)
    return {
      estimate,
      refused:
        `object of ${json.length} bytes would take ~${estimate} bytes decoded ` +
        `(more than ${limits.maxAmplification}× its size: crafted nesting, not a Kubernetes object)`,
    };
  return { estimate };
}
