// A workload as Wave writes it everywhere (`deployment/shop/web`: workloadName, the form the CLI
// takes), breakable only after a "/" — never in the middle of a name (issue 43).
import { Fragment } from "react";
import { workloadName } from "../../src/policy/spot.ts";

export function WorkloadName({ w }: { w: { kind: string; namespace: string; name: string } }) {
  const text = workloadName(w);
  const parts = text.split("/");
  return (
    <span className="workload" title={text}>
      {parts.map((p, i) => (
        <Fragment key={i}>
          {i > 0 ? (
            <>
              /<wbr />
            </>
          ) : null}
          {i < parts.length - 1 ? <span className="muted">{p}</span> : p}
        </Fragment>
      ))}
    </span>
  );
}
