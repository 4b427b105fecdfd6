public enum CutiEPlaceholder {}
