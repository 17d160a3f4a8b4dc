// An unbounded async queue: one side pushes, the other iterates; close ends it, fail throws.
export class AsyncQueue<T> implements AsyncIterable<T> {
  #items: T[] = [];
  #done = false;
  #error: unknown = undefined;
  #failed = false;
  #wake: (() => void) | undefined;

  push(item: T): void {
    if (this.#done) return;
    this.#items.push(item);
    this.#wake?.();
  }

  close(): void {
    this.#done = true;
    this.#wake?.();
  }

  fail(err: unknown): void {
    if (this.#done) return;
    this.#failed = true;
    this.#error = err;
    this.#done = true;
    this.#wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      const item = this.#items.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      if (this.#failed) throw this.#error;
      if (this.#done) return;
      await new Promise<void>((r) => (this.#wake = r));
      this.#wake = undefined;
    }
  }
}
