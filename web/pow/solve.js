// solve.js: the proof of work of a seckill waiting room, for a shop front
// to copy (docs/shop/waiting-room.md#proof-of-work). No dependencies: it
// needs Web Crypto (crypto.subtle), which browsers give pages served over
// HTTPS or from localhost, and fetch.
//
// A room whose `waiting_room.pow_bits` is over 0 asks a shopper's first
// join for a nonce such that SHA-256("<challenge>:<nonce>") starts with at
// least `bits` zero bits. joinWaitingRoom does it all:
//
//   import { joinWaitingRoom } from "./solve.js";
//   const place = await joinWaitingRoom("https://shop.example", 42, {
//     headers: { Authorization: `Bearer ${token}` },
//     onProgress: (hashes) => bar.update(hashes),
//   });
//   // place: the join's answer ({status, position, ticket, ...})

/**
 * Finds a nonce for challenge: the decimal counter from 0 whose
 * SHA-256("<challenge>:<nonce>") starts with at least `bits` zero bits.
 * Hashes `batch` nonces at a time, as Web Crypto answers each digest
 * asynchronously. About 2^bits hashes are needed, on average.
 *
 * @param {string} challenge the challenge, as the server answered it
 * @param {number} bits the leading zero bits wanted (0 to 32)
 * @param {{batch?: number, signal?: AbortSignal, onProgress?: (hashes: number) => void}} [options]
 * @returns {Promise<{nonce: string, hashes: number}>}
 */
export async function solvePow(challenge, bits, { batch = 512, signal, onProgress } = {}) {
  const prefix = new TextEncoder().encode(challenge + ":");
  let yielded = performance.now();
  for (let start = 0; ; start += batch) {
    if (performance.now() - yielded > 50) {
      // Let the page's own tasks run (a click, a timer, an abort).
      await new Promise((resolve) => setTimeout(resolve, 0));
      yielded = performance.now();
    }
    signal?.throwIfAborted();
    const sums = [];
    for (let i = 0; i < batch; i++) {
      const nonce = String(start + i);
      const msg = new Uint8Array(prefix.length + nonce.length);
      msg.set(prefix);
      for (let k = 0; k < nonce.length; k++) msg[prefix.length + k] = nonce.charCodeAt(k);
      sums.push(crypto.subtle.digest("SHA-256", msg));
    }
    const done = await Promise.all(sums);
    for (let i = 0; i < batch; i++) {
      if (leadingZeroBits(new Uint8Array(done[i])) >= bits) {
        return { nonce: String(start + i), hashes: start + i + 1 };
      }
    }
    onProgress?.(start + batch);
  }
}

/** The number of zero bits a byte array starts with. */
export function leadingZeroBits(bytes) {
  let n = 0;
  for (const b of bytes) {
    if (b !== 0) return n + Math.clz32(b) - 24;
    n += 8;
  }
  return n;
}

/**
 * Joins the waiting room of SKU `sku` at `base` (the seckill server's
 * origin): gets a challenge, solves it and joins with the Seckill-PoW
 * header. A room that asks for no proof (404 `no_pow`) is joined without
 * one; a challenge that expired while being solved is fetched again, once.
 * A shopper who holds a ticket is answered it without solving: joining
 * again without a proof answers their place.
 *
 * @param {string} base the server's origin, e.g. "https://shop.example"
 * @param {number|string} sku the SKU's id
 * @param {{headers?: Record<string,string>, signal?: AbortSignal, onProgress?: (hashes: number) => void}} [options]
 *   headers identify the shopper (Authorization, or X-User-ID behind a gateway)
 * @returns {Promise<object>} the join's answer; throws an Error with the
 *   server's `error` code as `code` and its `status` when refused
 */
export async function joinWaitingRoom(base, sku, { headers = {}, signal, onProgress } = {}) {
  const queue = `${base}/api/v1/skus/${encodeURIComponent(sku)}/queue`;
  const call = async (method, url, extra = {}) => {
    const res = await fetch(url, { method, headers: { Accept: "application/json", ...headers, ...extra }, signal });
    const body = await res.json().catch(() => null);
    return { status: res.status, body };
  };
  const held = await call("GET", queue);
  if (held.status === 200) return held.body; // a ticket held: no proof needed
  for (let attempt = 0; ; attempt++) {
    const ch = await call("GET", `${queue}/challenge`);
    if (ch.status === 404 && ch.body?.error === "no_pow") return checked(await call("POST", queue));
    checked(ch);
    const { nonce } = await solvePow(ch.body.challenge, ch.body.bits, { signal, onProgress });
    const joined = await call("POST", queue, { "Seckill-PoW": `${ch.body.challenge}:${nonce}` });
    if (joined.body?.error === "pow_expired" && attempt === 0) continue;
    return checked(joined);
  }
}

function checked({ status, body }) {
  if (status === 200) return body;
  const err = new Error(`seckill: ${status} ${body?.error ?? ""}: ${body?.detail ?? ""}`);
  err.status = status;
  err.code = body?.error;
  throw err;
}
