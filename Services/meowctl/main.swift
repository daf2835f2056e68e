print("meowctl")
