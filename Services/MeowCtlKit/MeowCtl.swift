public enum MeowCtl {}
