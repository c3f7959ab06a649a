// Json<T> is the type of T as it appears in a JSON document: @grafana/schema
// declares many fields as TypeScript string enums (FieldColorModeId, GraphDrawStyle,
// …), whose JSON form is the enum's string value. `${E}` turns a string enum into
// the union of its values; everything else is mapped member by member, keeping
// optional members optional so that unknown fields are still reported.
export type Json<T> = T extends string
  ? `${T}`
  : T extends number | boolean | null | undefined
    ? T
    : T extends ReadonlyArray<infer U>
      ? Array<Json<U>>
      : T extends object
        ? { [K in keyof T]: Json<T[K]> }
        : T;
