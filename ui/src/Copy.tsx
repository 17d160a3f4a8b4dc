import { useState } from "react";

/** Copies a command (a kubectl patch) to the clipboard; says so when done. */
export function Copy({ text, label = "Copy" }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      onClick={() => {
        void navigator.clipboard.writeText(text).then(
          () => setDone(true),
          () => setDone(false),
        );
      }}
    >
      {done ? "Copied" : label}
    </button>
  );
}
