// Wire shapes (JSON as the apiserver sends it) of the Kubernetes objects Wave reads and writes.
// Only the fields Wave uses are typed; timestamps stay RFC 3339 strings as on the wire, so the
// real adapter, the in-memory adapter and gRPC all carry identical objects.

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  /** Server-side apply's record of which manager owns which field (fieldsType FieldsV1). */
  managedFields?: ManagedFieldsEntry[];
}

/** A nested set of field paths, as the apiserver writes it: {"f:spec":{"f:threshold":{}}}. */
export interface FieldsV1 {
  [key: string]: FieldsV1;
}

export interface ManagedFieldsEntry {
  manager: string;
  operation: "Apply" | "Update";
  apiVersion?: string;
  time?: string;
  fieldsType?: "FieldsV1";
  fieldsV1?: FieldsV1;
  subresource?: string;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

export interface Taint {
  key: string;
  value?: string;
  effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
  timeAdded?: string;
}

export interface Toleration {
  key?: string;
  operator?: "Exists" | "Equal";
  value?: string;
  effect?: "NoSchedule" | "PreferNoSchedule" | "NoExecute" | "";
  tolerationSeconds?: number;
}

export interface NodeSelectorRequirement {
  key: string;
  /** Gte/Lte: Karpenter NodePool requirements from v1.15 (Kubernetes' own affinity has Gt/Lt only). */
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" | "Gte" | "Lte";
  values?: string[];
}

export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

export interface NodeAffinity {
  requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms: NodeSelectorTerm[] };
  preferredDuringSchedulingIgnoredDuringExecution?: { weight: number; preference: NodeSelectorTerm }[];
}

export interface Affinity {
  nodeAffinity?: NodeAffinity;
  podAffinity?: unknown;
  podAntiAffinity?: unknown;
}

export type ResourceList = Record<string, string>;

export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  resources?: { requests?: ResourceList; limits?: ResourceList };
  /** "Always" on an init container makes it a sidecar (its requests add to the pod's). */
  restartPolicy?: "Always";
}

export interface PodSpec {
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  affinity?: Affinity;
  tolerations?: Toleration[];
  containers: Container[];
  initContainers?: Container[];
  priority?: number;
  priorityClassName?: string;
  schedulerName?: string;
  overhead?: ResourceList;
  /** Pod-level requests/limits (PodLevelResources): cpu, memory and hugepages override containers'. */
  resources?: { requests?: ResourceList; limits?: ResourceList };
  terminationGracePeriodSeconds?: number;
  restartPolicy?: string;
}

export interface PodStatus {
  phase?: "Pending" | "Running" | "Succeeded" | "Failed" | "Unknown";
  conditions?: Condition[];
  startTime?: string;
  nominatedNodeName?: string;
  containerStatuses?: {
    name: string;
    image?: string;
    ready?: boolean;
    state?: Record<string, unknown>;
  }[];
}

export interface Pod extends KubeObject {
  spec: PodSpec;
  status?: PodStatus;
}

export interface NodeSpec {
  providerID?: string;
  unschedulable?: boolean;
  taints?: Taint[];
}

export interface NodeStatus {
  capacity?: ResourceList;
  allocatable?: ResourceList;
  conditions?: Condition[];
  nodeInfo?: { kubeletVersion?: string };
  images?: { names?: string[]; sizeBytes?: number }[];
}

export interface Node extends KubeObject {
  spec?: NodeSpec;
  status?: NodeStatus;
}

export interface ObjectReference {
  kind?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiVersion?: string;
}

export interface Event extends KubeObject {
  involvedObject: ObjectReference;
  reason?: string;
  message?: string;
  type?: "Normal" | "Warning";
  count?: number;
  firstTimestamp?: string;
  lastTimestamp?: string;
  eventTime?: string;
  source?: { component?: string; host?: string };
  reportingComponent?: string;
  reportingInstance?: string;
  /** What the reporter did (events.k8s.io's action; Wave's spot repair sets it: Evict, …). */
  action?: string;
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: {
    key: string;
    operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
    values?: string[];
  }[];
}

export interface PodTemplateSpec {
  metadata?: ObjectMeta;
  spec: PodSpec;
}

export interface Deployment extends KubeObject {
  spec: { replicas?: number; selector: LabelSelector; template: PodTemplateSpec };
  status?: { replicas?: number; readyReplicas?: number; availableReplicas?: number };
}

export interface ReplicaSet extends KubeObject {
  spec: { replicas?: number; selector: LabelSelector; template?: PodTemplateSpec };
  status?: { replicas?: number; readyReplicas?: number };
}

export interface StatefulSet extends KubeObject {
  spec: { replicas?: number; selector: LabelSelector; template: PodTemplateSpec; serviceName?: string };
  status?: { replicas?: number; readyReplicas?: number };
}

/** policy/v1 PodDisruptionBudget: what the Eviction API checks before it deletes a pod. */
export interface PodDisruptionBudget extends KubeObject {
  spec: {
    selector?: LabelSelector | null;
    /** A count or a percentage ("50%") of the expected pods. */
    minAvailable?: number | string;
    maxUnavailable?: number | string;
    unhealthyPodEvictionPolicy?: "IfHealthyBudget" | "AlwaysAllow";
  };
  status?: {
    disruptionsAllowed?: number;
    currentHealthy?: number;
    desiredHealthy?: number;
    expectedPods?: number;
  };
}

export interface DaemonSet extends KubeObject {
  spec: { selector: LabelSelector; template: PodTemplateSpec };
}

export interface PriorityClass extends KubeObject {
  value: number;
  globalDefault?: boolean;
  preemptionPolicy?: "PreemptLowerPriority" | "Never";
  description?: string;
}

export interface MutatingWebhookConfiguration extends KubeObject {
  webhooks?: Record<string, unknown>[];
}

export interface Lease extends KubeObject {
  spec: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

export interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

export interface Namespace extends KubeObject {
  status?: { phase?: string };
}

/** metav1.Status, as returned in error bodies and watch ERROR events. */
export interface Status {
  apiVersion?: "v1";
  kind?: "Status";
  status?: "Success" | "Failure";
  message?: string;
  reason?: string;
  code?: number;
  metadata?: { resourceVersion?: string };
  /** Server-side apply conflicts: one cause per field, type FieldManagerConflict. */
  details?: { name?: string; kind?: string; causes?: { type?: string; message?: string; field?: string }[] };
}
