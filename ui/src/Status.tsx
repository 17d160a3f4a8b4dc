// Loading, error and empty states: never a blank panel.
import type { ReactNode } from "react";

export function Loadable<T>(props: {
  state: { data: T | undefined; error: string | undefined; loading: boolean };
  what: string;
  children: (data: T) => ReactNode;
}) {
  const { data, error } = props.state;
  if (data !== undefined)
    return (
      <>
        {error ? (
          <p className="error" role="alert">
            Could not refresh {props.what}: {error} (showing the last answer)
          </p>
        ) : null}
        {props.children(data)}
      </>
    );
  if (error)
    return (
      <p className="error" role="alert">
        Could not load {props.what}: {error}
      </p>
    );
  return <p className="loading">Loading {props.what}…</p>;
}

export function Card(props: {
  label: string;
  value: string;
  sub?: ReactNode;
  testid?: string;
  tone?: string;
}) {
  return (
    <div className={`card ${props.tone ?? ""}`}>
      <div className="label">{props.label}</div>
      <div className="value" data-testid={props.testid}>
        {props.value}
      </div>
      {props.sub ? <div className="sub">{props.sub}</div> : null}
    </div>
  );
}

export function Bar({ fraction }: { fraction: number | null }) {
  if (fraction === null) return <span className="muted">no limit</span>;
  const w = Math.min(1, Math.max(0, fraction));
  return (
    <span className="bar" title={`${(fraction * 100).toFixed(0)}%`}>
      <span style={{ width: `${w * 100}%` }} className={w > 0.9 ? "hot" : ""} />
      <em>{(fraction * 100).toFixed(0)}%</em>
    </span>
  );
}
