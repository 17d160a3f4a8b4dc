// Splits a watch stream into JSON values: one per line, with lines and multi-byte characters
// free to straddle chunk boundaries.

export class JsonLinesDecoder {
  readonly #text = new TextDecoder("utf-8", { fatal: true });
  #buf = "";

  /** Feeds a chunk; returns the values of the lines it completed. */
  push(chunk: Uint8Array | string): unknown[] {
    this.#buf += typeof chunk === "string" ? chunk : this.#text.decode(chunk, { stream: true });
    const out: unknown[] = [];
    let nl = this.#buf.indexOf("\n");
    while (nl >= 0) {
      const line = this.#buf.slice(0, nl);
      this.#buf = this.#buf.slice(nl + 1);
      if (line.trim() !== "") out.push(parseLine(line));
      nl = this.#buf.indexOf("\n");
    }
    return out;
  }

  /** At the end of the stream: the last value if it had no newline; throws on a torn value. */
  end(): unknown[] {
    this.#buf += this.#text.decode();
    const rest = this.#buf;
    this.#buf = "";
    return rest.trim() === "" ? [] : [parseLine(rest)];
  }
}

function parseLine(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    const shown = line.length > 200 ? `${line.slice(0, 200)}…` : line;
    throw new Error(`malformed JSON in watch stream: ${shown}`);
  }
}
